"""What the resumable and elastic extensions cost in-process (issue 9: about twice the base
contract's time at most).

Certifies conforming samplers in-process (``pytest properties``, ``ci`` Hypothesis profile)
under ``torch``, ``torch+resumable`` and ``torch+elastic``, in turns (A B C A B C ...), and
prints each contract's median wall time and its ratio to ``torch``'s, pair by pair. The
samplers are the corpus's DistributedSampler rebuilt with state: ResumableSampler (torch and
torch+resumable) and ElasticSampler (torch+elastic, which ResumableSampler refuses by design);
torch's own DistributedSampler has no state_dict().

Run from the repo root: python benchmarks/bench_resumable.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESUMABLE = "selftests.corpus.resumable:ResumableSampler"
SAMPLERS = {
    "torch": RESUMABLE,
    "torch+resumable": RESUMABLE,
    "torch+elastic": "selftests.corpus.elastic:ElasticSampler",
}
CONTRACTS = tuple(SAMPLERS)
TARGET_RATIO = 2.0  # the "within about twice today's time for the torch contract alone"


def certify(contract: str) -> float:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "properties",
        "-q",
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        f"--sampler={SAMPLERS[contract]}",
        f"--contract={contract}",
    ]
    start = time.perf_counter()
    result = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=1800, env={**os.environ, "CI": "1"}
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(
            f"{SAMPLERS[contract]} under {contract} did not conform (exit {result.returncode}):\n{result.stdout[-3000:]}"
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="certifications per contract (default %(default)s)")
    args = parser.parse_args()
    times: dict[str, list[float]] = {contract: [] for contract in CONTRACTS}
    for _ in range(args.runs):
        for contract in CONTRACTS:
            times[contract].append(certify(contract))
    base = times[CONTRACTS[0]]
    print(f"in-process certification (pytest properties, ci profile), {args.runs} runs each:")
    for contract in CONTRACTS:
        ratios = [extended / alone for extended, alone in zip(times[contract], base, strict=True)]
        print(
            f"  {contract:16s} {SAMPLERS[contract].rpartition(':')[2]:17s} median {statistics.median(times[contract]):6.1f} s "
            f"(min {min(times[contract]):.1f}, max {max(times[contract]):.1f}); "
            f"ratio to torch, median {statistics.median(ratios):.2f} (target <= {TARGET_RATIO:g} for the extensions)"
        )


if __name__ == "__main__":
    main()
