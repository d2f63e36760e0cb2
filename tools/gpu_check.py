"""Certify over NCCL on a lent GPU machine, in one command that ends within 8 minutes.

    python tools/gpu_check.py OUT_DIR [--backend nccl|gloo] [--dry-run] [--only NAME,...]

From the root of a copy of this repository. It installs the suite from the working tree
when ``import sampler_conformance`` fails (no network: ``pip install --no-deps
--no-build-isolation --no-index -e .``, else a tree of links on ``PYTHONPATH``), prints the
GPUs and the versions, then runs each certification of :data:`PLAN` in a subprocess from the
repository root, as the console script (``python -m sampler_conformance.cli SPEC
--contract=C --backend=B --world-sizes=1 --certificate=OUT_DIR/NAME ...``): torch's
DistributedSampler under ``torch`` by the whole suite (``conformance/test_nccl.py``
included), the reference of each other subject, two known-bad samplers that must fail, and
torch's sampler again over gloo, for the timing side by side.

For each run it keeps the certificate and the output in OUT_DIR, and records the verdict
line, the exit code, the seconds and the ``not run:`` lines; it writes ``OUT_DIR/summary.md``,
prints it, and exits 1 when a verdict is not the expected one (0 when every one is; 2 when
nothing could be run). Each run has a timeout, and all of them one deadline
(``--time-limit``); a run past its time is killed with its process group.

``--dry-run`` runs the same plan cheaply on CPU over gloo: the dev profile, each
certification cut down with ``-k`` to a couple of tests (so a reference's expected verdict
is PARTIAL, not conforms) and without the cost probe (``--cost=skip``). ``--backend gloo`` runs the whole plan over gloo.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIME_LIMIT_S = 450.0  # every run's end, from the script's start: 8 minutes less the install's margin and the summary
MIN_START_S = 15.0  # a run that would get less time than this is not started
KILL_GRACE_S = 10.0  # after SIGTERM to a run's process group, before SIGKILL
INSTALL_TIMEOUT_S = 120.0
OUTPUT_TAIL_LINES = 8  # of a run's output, in the summary when its verdict is not the expected one
RANK_TIMEOUT_S = 60  # --rank-timeout: a hung rank is reported after this, well within its run's timeout

CONFORMS, DOES_NOT_CONFORM, PARTIAL = "conforms", "does not conform", "partial"
VERDICT_PREFIXES = ("VERDICT: ", "PARTIAL: ", "INTERRUPTED: ", "ERROR: ", "NO VERDICT: ")
_STATE_OF_PREFIX = {
    "PARTIAL: ": PARTIAL,
    "INTERRUPTED: ": "interrupted",
    "ERROR: ": "error",
    "NO VERDICT: ": "no verdict",
}
NCCL_TEST = "test_batch_counts_all_reduced_over_nccl"  # conformance/test_nccl.py
# A test in real process groups names its world size W2, or a change of it W1to2 (docs/process-groups.md).
_GROUP_TEST_ID = re.compile(r"[\[-]W\d+(?:to\d+)?[\]-]")
TORCH_SAMPLER = "torch.utils.data.distributed:DistributedSampler"


@dataclass(frozen=True)
class Expect:
    """What a run must end with: declared once, for the whole plan (see :func:`expected`)."""

    state: str  # the certificate's verdict.state
    exit_code: int
    failed: frozenset[str] = frozenset()  # invariants that must be among the failed ones
    fails_in_groups: bool = False  # a test in real process groups among the failed ones
    nccl_test: bool = False  # conformance/test_nccl.py ran (required only where the run's backend is nccl)

    def describe(self) -> str:
        parts = [f"{self.state} (exit {self.exit_code})"]
        if self.failed:
            parts.append(f"failing {', '.join(sorted(self.failed))}")
        if self.fails_in_groups:
            parts.append("in real groups")
        if self.nccl_test:
            parts.append("test_nccl ran")
        return ", ".join(parts)


@dataclass(frozen=True)
class Planned:
    name: str  # the run's name: its certificate is OUT_DIR/NAME.json
    spec: str
    contract: str
    expect: Expect
    dry_k: str  # the dry run's -k: a couple of tests, in-process and in real groups
    timeout_s: float  # the whole suite's run on the GPU; a dry run gets its share (DRY_TIMEOUT_S)
    backend: str | None = None  # None: the command's --backend; "gloo": always (the side by side)


REFERENCE = Expect(CONFORMS, 0)
PLAN: tuple[Planned, ...] = (
    Planned("torch", TORCH_SAMPLER, "torch", replace(REFERENCE, nccl_test=True), "len_matches_iter or nccl", 150),
    # A KNOWN_BAD sampler (selftests/catalogue.py) that fails in real groups too, at W=1 over NCCL...
    Planned(
        "bad_shuffle_ignored",
        "selftests.corpus.known_bad:ShuffleIgnored",
        "torch",
        Expect(DOES_NOT_CONFORM, 1, frozenset({"unshuffled_in_order"}), fails_in_groups=True),
        "unshuffled_in_order",
        120,
    ),
    # ...and one whose bug shows only where W > 1: in-process, or in groups of several GPUs.
    Planned(
        "bad_pads_from_tail",
        "selftests.corpus.known_bad:PadsFromTail",
        "torch",
        Expect(DOES_NOT_CONFORM, 1, frozenset({"pads_from_head"})),
        "pads_from_head",
        120,
    ),
    # The reference of each other subject (the selftests' test_streams, test_weighted, test_batches, test_loaders).
    Planned("stream", "sampler_conformance.adapters.torch_iterable:make", "stream", REFERENCE, "exactly_once", 150),
    Planned("weighted", "sampler_conformance.adapters.torch_weighted:make", "weighted", REFERENCE, "draw_counts", 90),
    Planned(
        "dynamic_batches",
        "sampler_conformance.adapters.budget_batches:make",
        "dynamic_batches",
        REFERENCE,
        "each_item_once",
        90,
    ),
    Planned(
        "data_loader",
        "sampler_conformance.adapters.torch_loader:make",
        "data_loader+elastic",
        REFERENCE,
        "loader_each_instance_once",
        60,
    ),
    # The first run again over gloo: the timing side by side (on a GPU machine its test_nccl still runs over NCCL).
    Planned("torch_gloo", TORCH_SAMPLER, "torch", REFERENCE, "len_matches_iter or nccl", 150, backend="gloo"),
)
DRY_TIMEOUT_S = 60.0  # one cut-down run, on 2 busy cores
SIDE_BY_SIDE = ("torch", "torch_gloo")


def backend_of(planned: Planned, backend: str) -> str:
    return planned.backend or backend


def expected(planned: Planned, backend: str, dry: bool) -> Expect:
    """The plan's expectation for this run: test_nccl is required only over NCCL (elsewhere it
    is skipped by design), and a dry run's -k leaves promised invariants unchecked, so a
    reference that conforms says PARTIAL (exit 0) there."""
    expect = planned.expect
    if backend_of(planned, backend) != "nccl":
        expect = replace(expect, nccl_test=False)
    if dry and expect.state == CONFORMS:
        expect = replace(expect, state=PARTIAL)
    return expect


@dataclass
class Outcome:
    """What one run ended with."""

    exit_code: int | None  # None: it did not end by itself (timed out, or never started)
    seconds: float
    verdict: str = ""  # the verdict line
    state: str | None = None
    not_run: list[str] = field(default_factory=list)  # the summary's "not run:" lines
    failed: frozenset[str] = frozenset()
    failed_in_groups: bool = False
    nccl_ran: bool = False
    backend_used: str = ""  # as the certificate says it
    note: str = ""  # why there is no verdict: timed out, not started, no certificate
    output_tail: list[str] = field(default_factory=list)  # the output's last lines, shown when unexpected


def judge(expect: Expect, outcome: Outcome) -> list[str]:
    """Each way the outcome differs from the expectation; empty when it is the expected one."""
    problems = []
    if outcome.note:
        problems.append(outcome.note)
    if outcome.state != expect.state:
        problems.append(f"state {outcome.state!r}, expected {expect.state!r}")
    if outcome.exit_code != expect.exit_code:
        problems.append(f"exit {outcome.exit_code}, expected {expect.exit_code}")
    missing = expect.failed - outcome.failed
    if missing:
        problems.append(f"did not fail {', '.join(sorted(missing))}")
    if expect.fails_in_groups and not outcome.failed_in_groups:
        problems.append("no test in real process groups failed")
    if expect.nccl_test and not outcome.nccl_ran:
        problems.append(f"{NCCL_TEST} did not run")
    return problems


def read_outcome(output: str, certificate: Path, exit_code: int | None, seconds: float, note: str = "") -> Outcome:
    """The verdict line and the "not run:" lines from the output; the state, the failed
    invariants and the tests that ran from the JSON certificate, when there is one."""
    lines = output.splitlines()
    verdicts = [line for line in lines if line.startswith(VERDICT_PREFIXES)]
    outcome = Outcome(exit_code, seconds, verdict=verdicts[-1] if verdicts else "", note=note)
    outcome.not_run = [line for line in lines if line.startswith("not run: ")]
    outcome.output_tail = lines[-OUTPUT_TAIL_LINES:]
    outcome.state = _state_of_line(outcome.verdict)
    if certificate.exists():
        try:
            written = json.loads(certificate.read_text())
            outcome.state = written["verdict"]["state"]
            failed = [i for i in written["invariants"] if i["status"] == "failed"]
            outcome.failed = frozenset(i["flag"] for i in failed)
            outcome.failed_in_groups = any(_GROUP_TEST_ID.search(t) for i in failed for t in i["failed_tests"])
            outcome.nccl_ran = any(t.startswith(NCCL_TEST) for i in written["invariants"] for t in i["tests"])
            outcome.backend_used = written["run"]["backend"]
        except (ValueError, KeyError, TypeError) as exc:
            outcome.note = outcome.note or f"unreadable certificate: {type(exc).__name__}: {exc}"
    elif not outcome.note:
        outcome.note = "no certificate written"
    return outcome


def _state_of_line(line: str) -> str | None:
    for prefix, state in _STATE_OF_PREFIX.items():
        if line.startswith(prefix):
            return state
    if line.startswith("VERDICT: "):
        return DOES_NOT_CONFORM if " does NOT conform " in line else CONFORMS
    return None


# -- set-up: the suite importable, the environment printed -------------------------------------


def _importable(module: str, env: dict[str, str]) -> bool:
    """In a fresh interpreter: a .pth an install just wrote is read only at start-up."""
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True, cwd=REPO)
    return probe.returncode == 0


def ensure_suite(env: dict[str, str], scratch: Path) -> str:
    """Make ``import sampler_conformance`` work in the runs; returns how, in words."""
    if _importable("sampler_conformance", env):
        return "sampler_conformance: importable already"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-e", "."]
    print(f"sampler_conformance is not importable: installing the working tree ({' '.join(command[1:])})", flush=True)
    try:
        pip = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        tail = (pip.stdout + pip.stderr).strip().splitlines()[-1:] or [""]
        print(f"pip exited {pip.returncode}: {tail[0]}", flush=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"pip failed: {type(exc).__name__}: {exc}", flush=True)
    if _importable("sampler_conformance", env):
        return "sampler_conformance: installed from the working tree (pip install -e .)"
    # No pip, or no setuptools >= 64 for an editable install: the build's mapping as links.
    links = link_package(scratch / "suite")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(links), env.get("PYTHONPATH")]))
    if _importable("sampler_conformance", env):
        return f"sampler_conformance: imported through links to the working tree ({links})"
    return "sampler_conformance: NOT importable, neither installed nor through links: every run will fail"


def package_dirs() -> dict[str, Path]:
    """Package name -> its folder, from pyproject.toml's [tool.setuptools.package-dir] (no
    tomllib before Python 3.11)."""
    text = (REPO / "pyproject.toml").read_text()
    section = text.split("[tool.setuptools.package-dir]", 1)[1].split("\n[", 1)[0]
    return {name: REPO / folder for name, folder in re.findall(r'^"?([\w.]+)"?\s*=\s*"([^"]+)"', section, re.M)}


def link_package(root: Path) -> Path:
    """``root/sampler_conformance``: a link to each entry of harness/, and to each mapped
    subpackage's folder; returns root, for PYTHONPATH."""
    dirs = package_dirs()
    top = dirs.pop("sampler_conformance")
    package = root / "sampler_conformance"
    package.mkdir(parents=True, exist_ok=True)
    for entry in top.iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in dirs.items():
        (root.joinpath(*name.split("."))).symlink_to(folder)
    return root


def minimum_versions() -> dict[str, str]:
    """Distribution -> the minimum version pyproject.toml's dependencies ask for."""
    text = (REPO / "pyproject.toml").read_text()
    dependencies = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    return dict(re.findall(r'"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)"', dependencies))


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def environment_lines(backend: str, world_sizes: str) -> tuple[list[str], list[str]]:
    """Lines saying what this machine has, and the problems that stop every run."""
    from importlib import metadata

    lines = [f"python {platform.python_version()} ({sys.executable}), {platform.platform()}"]
    fatal = []
    required = minimum_versions()
    for name in ("torch", "hypothesis", "pytest", "pytest-xdist", "numpy"):
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            line = f"{name}: NOT INSTALLED"
            if name != "pytest-xdist":  # the runs do not use -n
                fatal.append(f"{name} is not installed; the suite needs it (pyproject.toml)")
            lines.append(line)
            continue
        minimum = required.get(name)
        if minimum and _version_tuple(version) < _version_tuple(minimum):
            lines.append(f"{name} {version}: OLDER than the suite's minimum {minimum} (pyproject.toml): runs may fail")
        else:
            lines.append(f"{name} {version}" + (f" (the suite asks >= {minimum})" if minimum else ""))
    try:
        import torch
        import torch.distributed as dist

        cuda = torch.cuda.is_available()
        count = torch.cuda.device_count() if cuda else 0
        names = [torch.cuda.get_device_name(i) for i in range(count)]
        lines.append(
            f"CUDA {torch.version.cuda or 'none'} (torch build), available: {cuda}, devices: {count}"
            + (f": {', '.join(names)}" if names else "")
        )
        lines.append(f"NCCL available: {dist.is_available() and dist.is_nccl_available()}")
        needed = max(int(w) for w in world_sizes.split(","))
        if backend == "nccl" and count < needed:
            lines.append(
                f"NCCL needs {needed} CUDA device(s), found {count}: the NCCL runs will skip their groups, "
                "and their verdicts will not be the expected ones (use --backend gloo on CPU)"
            )
    except Exception as exc:  # an old or broken torch: said, not a crash
        lines.append(f"torch: cannot be inspected: {type(exc).__name__}: {exc}")
    return lines, fatal


# -- the runs ----------------------------------------------------------------------------------


def command(planned: Planned, backend: str, options: argparse.Namespace, out: Path) -> list[str]:
    """The console script's certification, run from the repository root."""
    # A dry run proves the plan and its expectations: each cut down with -k, and without the
    # cost probe, whose seconds would be most of a run cut down so.
    extra = ["-k", planned.dry_k, "--cost=skip"] if options.dry_run else []
    return [
        sys.executable,
        "-m",
        "sampler_conformance.cli",
        planned.spec,
        f"--contract={planned.contract}",
        f"--backend={backend_of(planned, backend)}",
        f"--world-sizes={options.world_sizes}",
        f"--hypothesis-profile={options.profile}",
        f"--rank-timeout={RANK_TIMEOUT_S}",
        f"--certificate={out / planned.name}",
        "-p",
        "no:cacheprovider",
        "-q",
        *extra,
    ]


def run_one(argv: Sequence[str], log: Path, timeout_s: float, env: dict[str, str]) -> tuple[int | None, float, str]:
    """Run, output to ``log``; kill its process group past ``timeout_s``. Returns the exit code
    (None when killed), the seconds, and why it was killed."""
    start = time.monotonic()
    with open(log, "w") as sink:
        process = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return process.wait(timeout=timeout_s), time.monotonic() - start, ""
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return None, time.monotonic() - start, f"timed out after {timeout_s:.0f} s: killed with its process group"
        except BaseException:  # Ctrl-C: leave nothing behind
            _kill_group(process)
            raise


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def run_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("COLUMNS", "200")
    return env


# -- the summary -------------------------------------------------------------------------------


def summary(
    plan: Sequence[Planned],
    outcomes: dict[str, Outcome],
    backend: str,
    dry: bool,
    header: Sequence[str],
) -> tuple[str, bool]:
    """summary.md's text, and whether every verdict is the expected one."""
    rows = [
        "| run | sampler | contract | backend | expected | got | exit | seconds | as expected |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    details = []
    unexpected = 0
    for planned in plan:
        expect = expected(planned, backend, dry)
        outcome = outcomes[planned.name]
        problems = judge(expect, outcome)
        unexpected += bool(problems)
        rows.append(
            f"| {planned.name} | `{planned.spec}` | {planned.contract} | {outcome.backend_used or backend_of(planned, backend)} "
            f"| {expect.describe()} | {outcome.state or '-'} | {outcome.exit_code} | {outcome.seconds:.1f} "
            f"| {'yes' if not problems else 'NO: ' + '; '.join(problems)} |"
        )
        details += [f"### {planned.name}", "", f"- verdict: {outcome.verdict or '(no verdict line)'}"]
        if outcome.failed:
            where = "; a test in real process groups among them" if outcome.failed_in_groups else ""
            details.append(f"- failed: {', '.join(sorted(outcome.failed))}{where}")
        if outcome.nccl_ran:
            details.append(f"- {NCCL_TEST}: ran")
        details += [f"- {line}" for line in outcome.not_run or ["not run: (none)"]]
        details.append(f"- certificate: {planned.name}.json, {planned.name}.md; output: {planned.name}.log")
        if problems and outcome.output_tail:
            details += ["- output tail:", "", "```", *outcome.output_tail, "```"]
        details.append("")
    planned_named = {planned.name: planned for planned in plan}
    timing = [
        f"- {name} over {outcomes[name].backend_used or backend_of(planned_named[name], backend)}: {outcomes[name].seconds:.1f} s"
        for name in SIDE_BY_SIDE
        if name in outcomes
    ]
    total = sum(o.seconds for o in outcomes.values())
    last = (
        f"ALL {len(plan)} RUNS AS EXPECTED ({total:.0f} s of runs)"
        if not unexpected
        else f"{unexpected} OF {len(plan)} RUNS NOT AS EXPECTED ({total:.0f} s of runs)"
    )
    text = "\n".join(
        [
            f"# gpu_check: {'dry run, ' if dry else ''}backend {backend}",
            "",
            *(f"- {line}" for line in header),
            "",
            *rows,
            "",
            "## Side by side: torch's DistributedSampler, the same certification",
            "",
            *(timing or ["- (not run)"]),
            "",
            "## Each run",
            "",
            *details,
            last,
            "",
        ]
    )
    return text, not unexpected


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("out_dir", type=Path, help="where the certificates, the outputs and summary.md go")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default=None, help="default nccl; gloo with --dry-run")
    parser.add_argument("--dry-run", action="store_true", help="the plan cut down with -k, on CPU over gloo: cheap")
    parser.add_argument("--world-sizes", default="1", help="--world-sizes of every run (default 1: one GPU)")
    parser.add_argument("--profile", default="dev", help="--hypothesis-profile of every run (default dev)")
    parser.add_argument("--only", default="", help="comma-separated names of the runs to make (default all)")
    parser.add_argument(
        "--time-limit", type=float, default=TIME_LIMIT_S, help="seconds for everything (default %(default)s)"
    )
    options = parser.parse_args(argv)
    options.backend = options.backend or ("gloo" if options.dry_run else "nccl")
    if not re.fullmatch(r"[1-9]\d*(,[1-9]\d*)*", options.world_sizes):
        parser.error(f"--world-sizes={options.world_sizes!r}: give positive ints, comma-separated, e.g. 1 or 1,2")
    names = {p.name for p in PLAN}
    unknown = set(filter(None, options.only.split(","))) - names
    if unknown:
        parser.error(f"--only: unknown run(s) {', '.join(sorted(unknown))}; the plan's are {', '.join(sorted(names))}")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()
    options = parse_arguments(argv)
    out: Path = options.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, options.only.split(",")))
    plan = [p for p in PLAN if not only or p.name in only]
    backend, dry = options.backend, options.dry_run
    print(f"gpu_check: {len(plan)} runs over {backend}{' (dry run)' if dry else ''}, results in {out}", flush=True)

    env = run_environment()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as scratch:
        header = [ensure_suite(env, Path(scratch))]
        lines, fatal = environment_lines(backend, options.world_sizes)
        header += lines
        header.append(
            f"runs: --world-sizes={options.world_sizes} --hypothesis-profile={options.profile}"
            + (" and each run's -k (dry run)" if dry else ", the whole suite")
        )
        for line in header:
            print(line, flush=True)
        outcomes: dict[str, Outcome] = {}
        for planned in plan:
            certificate = out / f"{planned.name}.json"
            certificate.unlink(missing_ok=True)
            left = options.time_limit - (time.monotonic() - started)
            timeout = min(DRY_TIMEOUT_S if dry else planned.timeout_s, left)
            if fatal or timeout < MIN_START_S:
                why = fatal[0] if fatal else f"not started: {left:.0f} s left of --time-limit={options.time_limit:.0f}"
                outcomes[planned.name] = Outcome(None, 0.0, note=why)
                print(f"-- {planned.name}: {why}", flush=True)
                continue
            argv_ = command(planned, backend, options, out)
            print(f"-- {planned.name}: {' '.join(argv_[1:])}  (timeout {timeout:.0f} s)", flush=True)
            log = out / f"{planned.name}.log"
            code, seconds, note = run_one(argv_, log, timeout, env)
            outcome = read_outcome(log.read_text(errors="replace"), certificate, code, seconds, note)
            outcomes[planned.name] = outcome
            problems = judge(expected(planned, backend, dry), outcome)
            print(f"   {outcome.verdict or outcome.note}", flush=True)
            print(
                f"   exit {code}, {seconds:.1f} s, {'as expected' if not problems else 'NOT AS EXPECTED: ' + '; '.join(problems)}",
                flush=True,
            )
    header.append(f"wall time: {time.monotonic() - started:.0f} s")
    text, ok = summary(plan, outcomes, backend, dry, header)
    (out / "summary.md").write_text(text)
    print("\n" + text, flush=True)
    if fatal:
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
