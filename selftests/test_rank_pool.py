"""The rank pool: faults become failures naming the rank, the pool recovers, nothing outlives
the session, and conformance/ catches what properties/ cannot see."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sampler_conformance.core.evidence import HarnessError, SamplerDeath, SamplerFault, SamplerHang
from sampler_conformance.execution.backend import choose_backend, rank_device
from sampler_conformance.execution.blame import sampler_frames_in_dump
from sampler_conformance.execution.rank_pool import RankPool
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.contracts import TORCH, SamplerContract
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC, load_plug
from sampler_conformance.subjects.index_sampler.scenarios.epochs import GROUP_BUILDS, ReadEpochs, read_epochs
from sampler_conformance.subjects.index_sampler.scenarios.resume_loader import resume_through_loader

from .corpus.rank_faults import HANG_ONCE_FLAG_ENV, SCRATCH_ENV
from .suite_run import REPO, SuiteRun, certify, draws

FAULTS = "selftests.corpus.rank_faults"
GOOD_RESUMABLE = "selftests.corpus.resumable:ResumableSampler"
MULTIPROCESS_BAD = "selftests.corpus.multiprocess_bad"
POOL_TIMEOUT_S = 5.0
CASE = IndexCase(dataset_size=10, world_size=2)
RUN_TIMEOUT_S = 300
TAG_ENV = "SELFTEST_RUN_TAG"
REAP_GRACE_S = 5.0


# ---- backend decisions, without a GPU ------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "world_size", "devices", "expected"),
    [
        ("auto", 4, 0, "gloo"),
        ("auto", 4, 2, "gloo"),
        ("auto", 4, 4, "nccl"),
        ("auto", 8, 8, "nccl"),
        ("gloo", 2, 8, "gloo"),
        ("nccl", 2, 2, "nccl"),
        ("nccl", 4, 0, None),
    ],
)
def test_backend_choice(requested, world_size, devices, expected):
    choice = choose_backend(requested, world_size, devices)
    assert choice.name == expected
    assert choice.runnable == (expected is not None)


def test_nccl_without_enough_gpus_skips_with_the_reason():
    assert choose_backend("nccl", 4, 0).skip_reason == "needs 4 CUDA devices, found 0"
    assert choose_backend("nccl", 8, 2).skip_reason == "needs 8 CUDA devices, found 2"


def test_device_placement():
    assert rank_device("nccl", 3) == "cuda:3"
    assert rank_device("gloo", 3) == "cpu"


# ---- faults, against a live pool in this process ----------------------------------------------


@pytest.fixture(scope="module")
def pool():
    live = RankPool(2, "gloo", POOL_TIMEOUT_S)
    yield live
    pids = live.pids
    live.close()
    assert all(_gone(pid) for pid in pids), f"ranks {pids} outlived close()"


def _read(pool: RankPool, sampler: str):
    return read_epochs(pool, load_plug(f"{FAULTS}:{sampler}"), TORCH, CASE, builds=GROUP_BUILDS)


def _recovers(pool: RankPool) -> None:
    pool.begin_test()
    run = read_epochs(pool, load_plug(DEFAULT_SPEC), TORCH, CASE, builds=GROUP_BUILDS)
    assert sorted(int(i) for rank in run.group[0].indices for i in rank) == list(range(10))


def test_raising_rank_is_named_with_its_traceback(pool):
    pool.begin_test()
    pool.start()
    before = pool.pids
    with pytest.raises(SamplerFault) as failure:
        _read(pool, "RaisesOnRankOne")
    text = str(failure.value)
    assert "rank 1: the sampler raised RuntimeError while iterating: rank 1 cannot read its shard" in text, text
    assert "traceback in rank 1:" in text and "rank_faults.py" in text and "in __iter__" in text, text
    assert "rank 0:" not in text, text
    # Every rank answered, so the group is intact and kept.
    assert pool.pids == before
    _recovers(pool)
    assert pool.pids == before


def _descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (Linux /proc): a rank's fork servers and the workers they started."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended while we read
        parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from Linux /proc")
def test_a_loader_whose_iterator_raised_leaves_no_worker_running(pool):
    """A sampler whose load_state_dict raises inside StatefulDataLoader's iterator, its two
    workers started: the rank stops them before it answers, instead of leaving them to the
    garbage collector, whose shutdown of that iterator waits 5 s for each worker."""
    pytest.importorskip("torchdata.stateful_dataloader", reason="the loader resume needs torchdata")
    contract = contract_named("torch+resumable")
    assert isinstance(contract, SamplerContract)
    pool.begin_test()
    resume_through_loader(pool, load_plug(GOOD_RESUMABLE), contract, CASE, epoch=0, cut=1, num_workers=2)
    servers = {pid: _descendants(pid) for pid in pool.pids}  # what a clean loader run leaves: fork servers
    with pytest.raises(SamplerFault, match="rank 1 refuses every state"):
        resume_through_loader(
            pool, load_plug(f"{FAULTS}:RefusesStateOnRankOne"), contract, CASE, epoch=0, cut=1, num_workers=2
        )
    assert {pid: _descendants(pid) for pid in pool.pids} == servers


@pytest.mark.parametrize(
    ("sampler", "how"),
    [("ExitsOnRankOne", "exited with code 3"), ("KilledOnRankOne", "killed by signal SIGKILL (exit code -9)")],
)
def test_dying_rank_is_named_with_its_exit(pool, sampler, how):
    pool.begin_test()
    pool.start()
    before = pool.pids
    with pytest.raises(SamplerDeath) as failure:  # a death costs a restart: no shrinking through more
        _read(pool, sampler)
    text = str(failure.value)
    assert f"rank 1 (pid {before[1]}) died inside a call into the sampler: {how}" in text, text
    assert all(_gone(pid) for pid in before), "the broken group was not torn down"
    _recovers(pool)
    assert set(pool.pids).isdisjoint(before), "the pool was not rebuilt"


@pytest.mark.parametrize(
    ("sampler", "stuck", "where"),
    [("HangsOnRankOne", [1], "in _hang"), ("SkipsCollectiveOnRankOne", [0], "in barrier")],
)
def test_hang_fails_after_the_timeout_with_every_stack(pool, sampler, stuck, where):
    pool.begin_test()
    pool.start()
    before = pool.pids
    start = time.monotonic()
    with pytest.raises(SamplerHang) as failure:
        _read(pool, sampler)
    elapsed = time.monotonic() - start
    text = str(failure.value)
    assert POOL_TIMEOUT_S <= elapsed < POOL_TIMEOUT_S + 10, elapsed
    assert f"rank(s) {stuck} did not answer within {POOL_TIMEOUT_S:g} s (--rank-timeout) of their last call" in text, (
        text
    )
    assert "--- rank 0 ---" in text and "--- rank 1 ---" in text, text
    assert where in text, text
    assert all(_gone(pid) for pid in before), "the hung group was not torn down"
    # Later cases of the same test fail at once instead of hanging again.
    start = time.monotonic()
    with pytest.raises(SamplerHang, match="failed earlier in this test"):
        _read(pool, sampler)
    assert time.monotonic() - start < 1
    _recovers(pool)


# ---- end to end, in pytest subprocesses -----------------------------------------------------


@pytest.fixture
def tag(monkeypatch) -> Iterator[str]:
    """Marks every process the run under test starts (they inherit the environment)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(TAG_ENV, value)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)  # hash() must differ per process, as by default
    yield value
    for pid in _tagged(value):  # hygiene if an assertion below failed: stop what the run left
        os.kill(pid, signal.SIGKILL)


def _suite(pytester, *args: str, timeout: float = RUN_TIMEOUT_S) -> SuiteRun:
    """A run in a fresh interpreter, as a user's is: these tests count the run's processes
    and rely on each having its own hash seed. Under the selftests' profile and seed unless
    ``args`` name a profile."""
    if not any(arg.startswith("--hypothesis-profile=") for arg in args):
        args = (*args, *draws())
    result = pytest.Pytester.runpytest_subprocess(
        pytester, *args, "-p", "no:cacheprovider", "-rfEs", "--disable-warnings", timeout=timeout
    )
    return SuiteRun(spec=" ".join(args), exit_code=int(result.ret), output="\n".join(result.outlines + result.errlines))


def _tagged(tag: str) -> list[int]:
    marker = f"{TAG_ENV}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _assert_no_orphans(tag: str) -> None:
    deadline = time.monotonic() + REAP_GRACE_S
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _tagged(tag)
    details = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120] for pid in left}
    assert not left, f"processes outlived the pytest session: {details}"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_hang_fails_one_test_and_the_next_tests_pass(pytester, tag, tmp_path, monkeypatch):
    monkeypatch.setenv(HANG_ONCE_FLAG_ENV, str(tmp_path / "hung-once"))
    run = _suite(
        pytester,
        str(REPO / "conformance" / "test_seed_experiment.py"),
        f"--sampler={FAULTS}:HangsOnceOnRankOne",
        "--rank-timeout=5",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    # Case 1 runs without a sampler; case 2 is the first to iterate it, and hangs.
    assert run.failed_tests == {"test_case2_same_split_every_epoch_without_set_epoch"}, run.explain()
    text = run.failure_text("test_case2_same_split_every_epoch_without_set_epoch")
    # Rank 1 hangs in the sampler; rank 0 then waits for it in the batch-count all_reduce.
    assert "did not answer within 5 s (--rank-timeout) of their last call" in text, run.explain()
    assert "--- rank 0 ---" in text and "--- rank 1 ---" in text, run.explain()
    assert "in _hang" in text and "in all_reduce" in text, run.explain()
    assert "7 passed" in run.output, run.explain()
    _assert_no_orphans(tag)


def test_loader_workers_that_cannot_start_are_a_harness_error_not_the_samplers(pytester, tag, monkeypatch):
    """A correct sampler whose rank cannot start DataLoader workers: no sampler frame on any
    traceback, so a pytest error (E) naming the cause, and no verdict. The rank raised, which
    a fresh group would raise again: it is not retried."""
    monkeypatch.setenv(SCRATCH_ENV, str(pytester.path))  # where the sampler puts its broken sitecustomize
    run = _suite(
        pytester,
        str(REPO / "conformance" / "test_dataloader.py"),
        f"--sampler={FAULTS}:LoaderWorkersCannotStart",
        "--world-sizes=2",
        "-k",
        "with_workers and keep_last",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert not run.failed_tests, run.explain()  # errors (E), not failures of the sampler
    assert "the suite failed, not the sampler" in run.output, run.explain()
    assert "retried on a fresh group" not in run.output, run.explain()
    assert "the machinery driving the sampler (no sampler frame on the traceback) raised EOFError" in run.output
    assert run.verdict.startswith("ERROR: the suite failed while checking"), run.verdict
    assert "does NOT conform" not in run.output and "conforms" not in run.verdict, run.explain()
    _assert_no_orphans(tag)


# pytest as `python -m pytest` runs it at a terminal, with faulthandler dumping every thread's
# stack on SIGUSR1 (to a copy of stderr taken before pytest captures it): what a controller
# that does not exit was doing. SIGINT gets Python's own handler back: a process started from
# a background job (`cmd &` without job control) inherits SIGINT ignored, and so would this
# controller, which then never sees the Ctrl-C (seen: both variants failing in whole selftest
# runs started with `nohup ... &`). With "thread", a second thread sleeps beside the main one,
# as torch's native threads may: a signal the kernel hands to it reaches Python's handler only
# once the main thread wakes.
_PYTEST_DUMPING_STACKS_ON_SIGUSR1 = (
    "import faulthandler, os, signal, sys, threading, time, pytest; "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "faulthandler.register(signal.SIGUSR1, file=os.fdopen(os.dup(2), 'w'), all_threads=True); "
    "sys.argv[1] == 'thread' and threading.Thread(target=time.sleep, args=(3600,), daemon=True).start(); "
    "sys.exit(pytest.main(sys.argv[2:]))"
)
INTERRUPTED_EXIT_S = 60


def _interrupt_the_process(pid: int) -> None:
    os.kill(pid, signal.SIGINT)


def _interrupt_another_thread(pid: int) -> None:
    """SIGINT to a thread of ``pid`` other than its main one, as the kernel may choose for a
    Ctrl-C when the process has several."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "tgkill"):
        pytest.skip("this C library has no tgkill() to signal one thread of another process")
    others = sorted(int(task.name) for task in Path(f"/proc/{pid}/task").iterdir() if int(task.name) != pid)
    assert others, "the controller runs no thread besides its main one"
    assert libc.tgkill(pid, others[0], signal.SIGINT) == 0, os.strerror(ctypes.get_errno())


@pytest.mark.parametrize(
    "threads, interrupt",
    [("alone", _interrupt_the_process), ("thread", _interrupt_another_thread)],
    ids=["to-the-process", "to-another-thread"],
)
def test_ctrl_c_leaves_no_process(pytester, tag, tmp_path, monkeypatch, threads, interrupt):
    hanging = tmp_path / "rank-one-hangs"
    monkeypatch.setenv(HANG_ONCE_FLAG_ENV, str(hanging))  # touched as rank 1 starts to hang
    command = [
        sys.executable,
        "-c",
        _PYTEST_DUMPING_STACKS_ON_SIGUSR1,
        threads,
        str(REPO / "conformance" / "test_process_groups.py"),
        f"--sampler={FAULTS}:HangsOnceOnRankOne",
        "--rank-timeout=120",
        "--world-sizes=2",
        "-k",
        "ranks_agree and keep_last",
        "-p",
        "no:cacheprovider",
    ]
    process = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not hanging.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hanging.exists(), "rank 1 never reached the sampler"
        time.sleep(0.5)  # and rank 0 the collective where it waits for rank 1
        interrupt(process.pid)
        try:
            output, _ = process.communicate(timeout=INTERRUPTED_EXIT_S)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGUSR1)
            time.sleep(1)
            process.kill()
            output, _ = process.communicate(timeout=10)
            pytest.fail(
                f"the interrupted controller did not exit within {INTERRUPTED_EXIT_S} s; its output and stacks:\n{output.decode()[-6000:]}"
            )
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
    assert b"KeyboardInterrupt" in output, output[-3000:]
    # A real Ctrl-C: no verdict, and never "conforms".
    assert b"INTERRUPTED: the run stopped before it finished" in output and b"conforms" not in output, output[-3000:]
    _assert_no_orphans(tag)


KILLED_CONTROLLER = f"""
from sampler_conformance.subjects.index_sampler.contracts import TORCH, SamplerContract
from sampler_conformance.subjects.index_sampler.plug import load_plug
from sampler_conformance.execution.rank_pool import RankPool
from sampler_conformance.subjects.index_sampler.scenarios.epochs import GROUP_BUILDS, read_epochs
from sampler_conformance.subjects.index_sampler.case import IndexCase

if __name__ == "__main__":
    pool = RankPool(2, "gloo", 120)
    pool.start()
    print("started", flush=True)
    case = IndexCase(dataset_size=10, world_size=2)
    read_epochs(pool, load_plug("{FAULTS}:HangsOnRankOne"), TORCH, case, builds=GROUP_BUILDS)
"""


def test_a_controller_killed_while_a_rank_hangs_leaves_no_process(tmp_path, tag):
    """SIGKILL leaves the controller no time to tear its pool down: its ranks, each rank's
    loader-worker fork server and the fork servers they came from must go by themselves,
    the rank hung in the sampler included."""
    script = tmp_path / "controller.py"
    script.write_text(KILLED_CONTROLLER)
    controller = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert controller.stdout is not None and controller.stdout.readline() == "started\n"
        time.sleep(2)  # rank 1 hangs in the sampler, rank 0 waits for it
        assert len(_tagged(tag)) >= 5, "the controller, 2 ranks, their fork servers"
    finally:
        controller.kill()
        controller.wait(30)
    _assert_no_orphans(tag)


def test_xdist_runs_two_pools_side_by_side(pytester, tag):
    run = _suite(
        pytester,
        str(REPO / "conformance" / "test_seed_experiment.py"),
        str(REPO / "conformance" / "test_process_groups.py"),
        "-n",
        "2",
        "-v",
        "--world-sizes=2",
        "-k",
        "seed_experiment or keep_last",
    )
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert not run.failed_tests, run.explain()
    # Both workers ran group tests, each with its own pool.
    assert "[gw0]" in run.output and "[gw1]" in run.output, run.explain()
    _assert_no_orphans(tag)


# Bugs that only show across processes, and invariants a run of conformance/ must fail for them.
MULTIPROCESS_ONLY_BUGS = {
    f"{MULTIPROCESS_BAD}:{name}": {"agrees_across_ranks", "covers"}
    for name in ("HashSeededShuffle", "MemoisedUnseededPermutation")
}


@pytest.mark.parametrize("sampler", ["HashSeededShuffle", "MemoisedUnseededPermutation"])
def test_multiprocess_only_bug_passes_properties_and_fails_conformance(pytester, tag, sampler):
    spec = f"{MULTIPROCESS_BAD}:{sampler}"
    in_process = certify(pytester, spec)
    assert in_process.exit_code == pytest.ExitCode.OK, in_process.explain()

    run = _suite(
        pytester,
        str(REPO / "properties" / "test_per_epoch.py"),
        str(REPO / "conformance" / "test_process_groups.py"),
        f"--sampler={spec}",
        "--ranks=groups",
        "--world-sizes=2",
        "--hypothesis-profile=ci",
        "--rank-timeout=60",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert {"test_ranks_agree_on_one_order", "test_per_epoch_invariant"} <= run.failed_tests, run.explain()
    assert "[ranks agree on one global order]" in run.failure_text("test_ranks_agree_on_one_order"), run.explain()
    assert "[union coverage]" in run.failure_text("test_per_epoch_invariant"), run.explain()
    assert "does NOT conform" in run.verdict, run.verdict
    assert all(flag in run.verdict.partition("failed: ")[2] for flag in MULTIPROCESS_ONLY_BUGS[spec]), run.verdict
    _assert_no_orphans(tag)


def test_a_sampler_on_the_global_rng_parts_the_ranks_once_one_rank_draws_more(pytester, tag):
    """Every rank's global RNGs seeded alike, then one draw more on rank 0: a sampler that
    shuffles with the global generator (``GlobalRNG``: ``torch.randperm(N)``) computes
    another order there, and the test says why. In-process it fails ``deterministic``, the
    cause (selftests/test_known_bad.py); this is the consequence, in real groups."""
    run = _suite(
        pytester,
        str(REPO / "conformance" / "test_process_groups.py"),
        "--sampler=selftests.corpus.known_bad:GlobalRNG",
        "--world-sizes=2",
        "-k",
        "drew_more",
    )
    assert run.failed_tests == {"test_ranks_agree_after_one_rank_drew_more_from_the_global_rngs"}, run.explain()
    assert run.verdict.partition("failed: ")[2].split(";")[0] == "agrees_across_ranks", run.verdict
    failure = run.failure_text("test_ranks_agree_after_one_rank_drew_more_from_the_global_rngs")
    assert "then rank 0 drew once more from each" in failure and "the order follows the global RNGs" in failure, failure
    _assert_no_orphans(tag)


def test_torch_sampler_passes_every_test_in_real_groups(pytester, tag):
    # Groups of 2: test_contracts certifies the reference through the whole suite too.
    run = _suite(
        pytester,
        str(REPO / "properties"),
        str(REPO / "conformance"),
        f"--sampler={DEFAULT_SPEC}",
        "--ranks=groups",
        "--world-sizes=2",
    )
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert not run.failed_tests, run.explain()
    # Real groups alone leave the in-process-only invariants unchecked: PARTIAL, never "conforms".
    assert (
        run.verdict.startswith("PARTIAL: ")
        and "not run: seed_effective, validates_arguments, edge_sizes" in run.verdict
    )
    _assert_no_orphans(tag)


def test_nccl_without_gpus_skips_every_group_test(pytester, tag):
    run = _suite(pytester, str(REPO / "conformance" / "test_process_groups.py"), "--backend=nccl", "--world-sizes=4")
    # Nothing ran: no failure, and no verdict either.
    assert run.exit_code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), run.explain()
    assert "needs 4 CUDA devices, found 0" in run.output and " passed" not in run.output, run.explain()


# ---- the suite's own failures are not the sampler's -------------------------------------------

# A rank waiting for a DataLoader worker that never delivers (seen with forked workers), and
# a rank hung inside a sampler: only the second has a frame outside the suite's machinery.
WAITING_FOR_A_WORKER = """Current thread 0x00007f0492fbfb80 (most recent call first):
  File "/usr/lib/python3.11/selectors.py", line 415 in select
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 113 in get
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1291 in _try_get_data
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 725 in __next__
  File "{harness}/execution/rank_body.py", line 180 in <genexpr>
  File "<string>", line 1 in <module>
"""
HUNG_IN_A_SAMPLER = """Current thread 0x00007f21053c8b80 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 327 in wait
  File "/home/me/project/my_sampler.py", line 30 in __iter__
  File "{harness}/execution/rank_body.py", line 180 in <genexpr>
"""


def test_a_hang_with_no_sampler_frame_is_not_blamed_on_the_sampler():
    harness_dir = str(REPO / "harness")
    stdlib = os.path.dirname(os.__file__)
    waiting = WAITING_FOR_A_WORKER.replace("/usr/lib/python3.11", stdlib).format(harness=harness_dir)
    hung = HUNG_IN_A_SAMPLER.replace("/usr/lib/python3.11", stdlib).format(harness=harness_dir)
    assert sampler_frames_in_dump(waiting) == []
    assert sampler_frames_in_dump(hung) == ["/home/me/project/my_sampler.py in __iter__"]


def test_a_group_that_cannot_start_is_a_harness_error_retried_once():
    """NCCL without GPUs: the rendezvous fails before any sampler code runs. That is the
    suite's error (never "does not conform"), and the request is tried once more first."""
    broken = RankPool(2, "nccl", POOL_TIMEOUT_S)
    try:
        with pytest.raises(HarnessError) as failure:
            broken.request(ReadEpochs(DEFAULT_SPEC, TORCH, CASE))
    finally:
        broken.close()
    text = str(failure.value)
    assert "the suite failed, not the sampler" in text and "joining the nccl process group failed" in text, text
    assert "retried on a fresh group" in text, text
    assert broken.starts == 2
