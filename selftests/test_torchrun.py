"""``torchrun -m sampler_conformance.torchrun``: the real-group checks on the ranks torchrun started.

Each test runs torchrun (``python -m torch.distributed.run``) in a subprocess, cwd a temporary
directory, gloo on CPU: one node of 4 ranks, and two torchrun invocations on this machine
acting as two nodes (c10d rendezvous on 127.0.0.1, a free port). The verdict must be the one
a plain pytest run gives at W=4, every rank must exit with the same code, and a rank that
dies or hangs is named with its host, with no process left behind.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from sampler_conformance.subjects.index_sampler.contracts import TORCH

from .suite_run import REPO, VERDICT_PREFIXES, draws
from .test_rank_pool import _assert_no_orphans, tag  # noqa: F401 - tag is a fixture

ENTRY = "sampler_conformance.torchrun"
MULTIPROCESS_BAD = "selftests.corpus.multiprocess_bad:HashSeededShuffle"
# HashSeededShuffle's order depends on each process's random hash seed, so which invariants
# a run catches varies from run to run: always {agrees_across_ranks, covers} (as
# test_rank_pool.MULTIPROCESS_ONLY_BUGS), and at most the invariants that compare the ranks'
# shares. `python -m pytest --world-sizes=4 --sampler=...HashSeededShuffle
# --hypothesis-profile=dev --hypothesis-seed=0` failed all five in the run we measured (16
# failed, 82 passed, 17 skipped); so did torchrun. Exact verdicts through every entry point
# are compared with a deterministic sampler in test_installed_package.
HASH_SEEDED_ALWAYS_FAILS = {"covers", "agrees_across_ranks"}
HASH_SEEDED_MAY_FAIL = {"covers", "disjoint", "pads_from_head", "strided", "agrees_across_ranks"}
# A full certification under torchrun takes 40-60 s on 2 idle cores; this long is a hang.
RUN_TIMEOUT_S = 420
FAULT_RANK_TIMEOUT_S = 5
ONE_TEST = ("-k", "test_ranks_agree_on_one_order and keep_last")
_RANK_EXIT = re.compile(rf"^{re.escape(ENTRY)}: rank (\d+) on (\S+) exits with (-?\d+)$", re.MULTILINE)
HOST = socket.gethostname()


@dataclass(frozen=True)
class TorchrunRun:
    exit_code: int  # torchrun's own: 0 when every rank exited 0, else 1
    output: str
    certificate: dict | None

    @property
    def rank_exits(self) -> dict[int, int]:
        """Each rank's exit code, as the rank printed it last."""
        return {int(rank): int(code) for rank, _, code in _RANK_EXIT.findall(self.output)}

    @property
    def verdict(self) -> str:
        lines = [line for line in self.output.splitlines() if line.startswith(VERDICT_PREFIXES)]
        assert len(lines) == 1, f"expected one verdict line, got {lines}\n{self.explain()}"
        return lines[0]

    @property
    def failed_invariants(self) -> set[str]:
        assert self.certificate is not None, f"no certificate written\n{self.explain()}"
        return {i["flag"] for i in self.certificate["invariants"] if i["status"] == "failed"}

    def explain(self) -> str:
        return f"torchrun exited {self.exit_code}; output tail:\n{self.output[-6000:]}"


def _command(launcher: list[str], spec: str, *options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        *launcher,
        "-m",
        ENTRY,
        spec,
        *draws(),
        "-p",
        "no:cacheprovider",
        "--disable-warnings",
        *options,
    ]


def _finish(process: subprocess.Popen, certificate: Path | None) -> TorchrunRun:
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    written = certificate.with_suffix(".json") if certificate is not None else None
    return TorchrunRun(
        process.returncode,
        output.decode(errors="replace"),
        json.loads(written.read_text()) if written is not None and written.exists() else None,
    )


def _start(cwd: Path, launcher: list[str], spec: str, *options: str) -> subprocess.Popen:
    return subprocess.Popen(
        _command(launcher, spec, *options), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def _standalone(cwd: Path, spec: str, *options: str, nproc: int = 4) -> TorchrunRun:
    certificate = cwd / "certificate"
    process = _start(cwd, ["--standalone", f"--nproc-per-node={nproc}"], spec, f"--certificate={certificate}", *options)
    return _finish(process, certificate)


def _every_rank_exits(run: TorchrunRun, code: int, world_size: int = 4) -> None:
    assert run.rank_exits == {rank: code for rank in range(world_size)}, run.explain()
    # torchrun's failure report lists no rank torn down by a signal.
    assert "(SIGTERM)" not in run.output and "exitcode  : -" not in run.output, run.explain()


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---- one node, 4 ranks ----------------------------------------------------------------------


def test_distributed_sampler_conforms_on_four_ranks(tmp_path, tag):  # noqa: F811
    run = _standalone(tmp_path, "torch.utils.data.distributed:DistributedSampler")
    assert run.exit_code == 0, run.explain()
    _every_rank_exits(run, 0)
    promised = len(TORCH.flags)
    assert run.verdict == (
        "VERDICT: torch.utils.data.distributed:DistributedSampler conforms to contract "
        f"'torch' ({promised} invariants: {promised} held, 0 failed)"
    ), run.explain()
    assert run.certificate is not None, run.explain()
    assert run.certificate["verdict"]["state"] == "conforms", run.certificate["verdict"]
    assert run.certificate["run"]["world_sizes"] == [4], run.certificate["run"]
    _assert_no_orphans(tag)


def test_multiprocess_only_bug_is_rejected_as_by_plain_pytest(tmp_path, tag):  # noqa: F811
    run = _standalone(tmp_path, MULTIPROCESS_BAD)
    assert run.exit_code == 1, run.explain()
    _every_rank_exits(run, 1)
    assert run.verdict.startswith(f"VERDICT: {MULTIPROCESS_BAD} does NOT conform"), run.verdict
    assert HASH_SEEDED_ALWAYS_FAILS <= run.failed_invariants <= HASH_SEEDED_MAY_FAIL, run.explain()
    _assert_no_orphans(tag)


def test_a_streaming_dataset_given_as_a_file_reaches_the_loader_workers_of_torchruns_ranks(tmp_path):
    """Workers unpickle the rank's dataset: its module, loaded from a file, must be in theirs (worker_modules)."""
    spec = f"{REPO / 'adapters' / 'torch_iterable.py'}:make"
    run = _standalone(tmp_path, spec, "--contract=stream", "-k", "exactly_once and not simulated", nproc=2)
    assert run.certificate is not None, run.explain()
    statuses = {i["flag"]: i["status"] for i in run.certificate["invariants"]}
    assert statuses["exactly_once"] == "held", run.explain()


def test_bad_spec_is_one_error_line_and_the_same_exit_everywhere(tmp_path):
    run = _standalone(tmp_path, "selftests.corpus.no_such_module:Sampler", nproc=2)
    assert run.exit_code == 1, run.explain()  # torchrun's, since its ranks failed
    _every_rank_exits(run, int(pytest.ExitCode.USAGE_ERROR), world_size=2)
    errors = [line for line in run.output.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1 and "no_such_module" in errors[0], run.explain()


# ---- two nodes on this machine ---------------------------------------------------------------


def test_two_nodes_reject_the_multiprocess_only_bug(tmp_path, tag):  # noqa: F811
    rendezvous = [f"--rdzv-id=selftest-{uuid.uuid4().hex}", "--rdzv-backend=c10d", "--nnodes=2", "--nproc-per-node=2"]
    certificate = tmp_path / "certificate"
    nodes = []
    for node in (0, 1):
        directory = tmp_path / f"node{node}"
        directory.mkdir()
        nodes.append(directory)
    endpoint = f"--rdzv-endpoint=127.0.0.1:{_free_loopback_port()}"  # reserved, released just before the start
    processes = [
        _start(
            directory,
            [*rendezvous, endpoint, f"--node-rank={node}"],
            MULTIPROCESS_BAD,
            f"--certificate={certificate}",
            *ONE_TEST,
        )
        for node, directory in enumerate(nodes)
    ]
    runs = [_finish(process, certificate) for process in processes]
    both = "\n".join(run.explain() for run in runs)
    assert [run.exit_code for run in runs] == [1, 1], both
    assert runs[0].rank_exits == {0: 1, 1: 1} and runs[1].rank_exits == {2: 1, 3: 1}, both
    assert runs[0].verdict.startswith(f"VERDICT: {MULTIPROCESS_BAD} does NOT conform"), both
    assert runs[0].failed_invariants == {"agrees_across_ranks"}, both
    assert not any(line.startswith(VERDICT_PREFIXES) for line in runs[1].output.splitlines()), both  # rank 0 reports
    _assert_no_orphans(tag)


# ---- faults: a rank that raises, dies or hangs ---------------------------------------------


def test_raising_rank_is_named_with_its_host_and_exception(tmp_path, tag):  # noqa: F811
    run = _standalone(tmp_path, "selftests.corpus.rank_faults:RaisesOnRankOne", *ONE_TEST, nproc=2)
    assert run.exit_code == 1, run.explain()
    _every_rank_exits(run, 1, world_size=2)
    assert (
        f"rank 1 on {HOST}: the sampler raised RuntimeError while iterating: rank 1 cannot read its shard"
    ) in run.output, run.explain()
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    _assert_no_orphans(tag)


def test_dying_rank_is_named_with_its_host_and_exit(tmp_path, tag):  # noqa: F811
    run = _standalone(tmp_path, "selftests.corpus.rank_faults:ExitsOnRankTwo", *ONE_TEST, nproc=3)
    assert run.exit_code == 1, run.explain()
    _every_rank_exits(run, 1, world_size=3)
    assert re.search(
        rf"rank 2 \(pid \d+ on {re.escape(HOST)}\) died inside a call into the sampler: "
        rf"exited with code 3",
        run.output,
    ), run.explain()
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    _assert_no_orphans(tag)


def test_hanging_rank_is_named_with_its_host_and_stack(tmp_path, tag):  # noqa: F811
    run = _standalone(
        tmp_path,
        "selftests.corpus.rank_faults:HangsOnRankOne",
        *ONE_TEST,
        f"--rank-timeout={FAULT_RANK_TIMEOUT_S}",
        nproc=2,
    )
    assert run.exit_code == 1, run.explain()
    _every_rank_exits(run, 1, world_size=2)
    assert (
        f"rank(s) [1] (on {HOST}) did not answer within {FAULT_RANK_TIMEOUT_S} s (--rank-timeout) of their "
        f"last call into the sampler"
    ) in run.output, run.explain()
    assert f"--- rank 1 on {HOST} ---" in run.output and "in _hang" in run.output, run.explain()
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    _assert_no_orphans(tag)
