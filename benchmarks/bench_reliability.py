"""How often the default certification says "conforms" for torch's own DistributedSampler.

Certifies torch's DistributedSampler (`python -m pytest`, the README's command) many
times from a fresh copy of the repo (`git clone` of the committed tree), in three ways:

- back to back, the first run with an empty Hypothesis database and no bytecode caches;
- two runs side by side, each in its own copy (a loaded machine);
- with `-n 2` (pytest-xdist).

Prints one line per run (its verdict line and wall time) and how many of all runs said
"conforms". Any other verdict on torch's own sampler is a false failure of the suite.
Target: 40 of 40 on 2 cores.

Run from the repo root: python benchmarks/bench_reliability.py [--back-to-back 16] [--pairs 8] [--xdist 8]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFORMS = "conforms to contract 'torch'"
RUN_TIMEOUT_S = 900  # a run that takes this long has hung: counted, never waited on forever
TARGET = "40 of 40"


@dataclass(frozen=True)
class Run:
    how: str
    exit_code: int
    verdict: str
    seconds: float

    @property
    def conforms(self) -> bool:
        return self.exit_code == 0 and CONFORMS in self.verdict


def fresh_copy(parent: Path, name: str) -> Path:
    """The committed tree, cloned: no Hypothesis database, no bytecode caches."""
    target = parent / name
    subprocess.run(["git", "clone", "--quiet", "--local", str(REPO), str(target)], check=True)
    return target


def certify(copy: Path, how: str, *options: str) -> Run:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *options]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=copy, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Run(how, -1, f"(no verdict: did not finish within {RUN_TIMEOUT_S} s)", time.monotonic() - started)
    lines = [
        line
        for line in done.stdout.splitlines()
        if line.startswith(("VERDICT", "PARTIAL", "INTERRUPTED", "ERROR", "NO VERDICT"))
    ]
    verdict = lines[-1] if lines else f"(no verdict line; last output: {done.stdout.strip().splitlines()[-1:]})"
    return Run(how, done.returncode, verdict, time.monotonic() - started)


def report(run: Run) -> Run:
    mark = "ok  " if run.conforms else "FAIL"
    print(f"{mark} {run.how:14s} exit {run.exit_code:2d} {run.seconds:6.1f} s  {run.verdict[:160]}", flush=True)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--back-to-back", type=int, default=16, help="runs one after another (default %(default)s)")
    parser.add_argument("--pairs", type=int, default=8, help="pairs of runs side by side (default %(default)s)")
    parser.add_argument("--xdist", type=int, default=8, help="runs with -n 2 (default %(default)s)")
    arguments = parser.parse_args(argv)
    runs: list[Run] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench_reliability_") as scratch:
        first = fresh_copy(Path(scratch), "copy")
        for k in range(arguments.back_to_back):
            runs.append(report(certify(first, "cold" if k == 0 else "back to back")))
        second = fresh_copy(Path(scratch), "second-copy")
        with ThreadPoolExecutor(max_workers=2) as side_by_side:
            for _ in range(arguments.pairs):
                pair = [side_by_side.submit(certify, copy, "side by side") for copy in (first, second)]
                runs += [report(future.result()) for future in pair]
        for _ in range(arguments.xdist):
            runs.append(report(certify(first, "-n 2", "-n", "2")))
    conforming = sum(run.conforms for run in runs)
    seconds = sorted(run.seconds for run in runs)
    print(
        f'\n{conforming} of {len(runs)} runs said "conforms" (target: {TARGET}); '
        f"run time min {seconds[0]:.1f} s, median {seconds[len(seconds) // 2]:.1f} s, max {seconds[-1]:.1f} s; "
        f"total {time.monotonic() - started:.0f} s"
    )
    return 0 if conforming == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
