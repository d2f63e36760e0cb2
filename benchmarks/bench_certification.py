"""Speed figures for the in-process certification (issue 2).

Prints, in one run:
1. the wall time of the default certification of torch's DistributedSampler
   (`pytest properties` under the `ci` Hypothesis profile), against a 30 s target;
2. for N = 10,000,000 and W = 8: the time the sampler takes to produce every rank's
   indices, the time reading them into arrays takes, and the time the checkers take,
   with checking/producing as a ratio (target: below 1).

Run from the repo root: python benchmarks/bench_certification.py [--skip-suite]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sampler_conformance.core.case import Observation  # noqa: E402
from sampler_conformance.subjects.common.index_dataset import IndexDataset  # noqa: E402
from sampler_conformance.subjects.common.reading import as_index_array  # noqa: E402
from sampler_conformance.subjects.index_sampler.case import IndexCase  # noqa: E402
from sampler_conformance.subjects.index_sampler.checks import structural_violations  # noqa: E402
from sampler_conformance.subjects.index_sampler.contracts import TORCH  # noqa: E402
from sampler_conformance.subjects.index_sampler.layout_checks import check_assignment  # noqa: E402
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC, load_plug  # noqa: E402

SUITE_TARGET_S = 30.0


def time_certification() -> float:
    command = [sys.executable, "-m", "pytest", "properties", "-q", "-p", "no:cacheprovider", "--hypothesis-profile=ci"]
    start = time.perf_counter()
    result = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "1"}
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"certification failed (exit {result.returncode}):\n{result.stdout[-3000:]}")
    return elapsed


def time_large_case(size: int, world: int) -> dict[str, float]:
    plug = load_plug(DEFAULT_SPEC)
    dataset = IndexDataset(size)
    case = IndexCase(dataset_size=size, world_size=world, shuffle=True, seed=7)

    start = time.perf_counter()
    produced = [list(plug.build(dataset, world, rank, **case.sampler_options(TORCH))) for rank in range(world)]
    single = list(plug.build(dataset, 1, 0, **case.sampler_options(TORCH)))
    producing = time.perf_counter() - start

    start = time.perf_counter()
    arrays = tuple(as_index_array(items) for items in produced)
    single_array = as_index_array(single)
    reading = time.perf_counter() - start

    observation = Observation(case, arrays, tuple(len(a) for a in arrays))
    reference = Observation(case.with_(world_size=1), (single_array,), (len(single_array),))
    start = time.perf_counter()
    violations = structural_violations(observation, TORCH) + check_assignment(observation, reference, "strided")
    checking = time.perf_counter() - start
    if violations:
        sys.exit(f"unexpected violations on the large case: {violations}")
    return {"producing": producing, "reading": reading, "checking": checking}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-suite", action="store_true", help="only time the large case")
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--world", type=int, default=8)
    args = parser.parse_args()

    if not args.skip_suite:
        suite = time_certification()
        verdict = "within" if suite <= SUITE_TARGET_S else "OVER"
        print(
            f"certification of {DEFAULT_SPEC} (ci profile): {suite:.1f} s ({verdict} the {SUITE_TARGET_S:.0f} s target)"
        )

    figures = time_large_case(args.size, args.world)
    print(f"N={args.size:,}, W={args.world} (every rank, plus the one-rank reference order):")
    print(f"  sampler producing indices: {figures['producing']:.2f} s")
    print(f"  reading them into arrays:  {figures['reading']:.2f} s")
    print(f"  checkers:                  {figures['checking']:.2f} s")
    print(f"  checking / producing:      {figures['checking'] / figures['producing']:.2f} (target < 1)")
    print(
        f"  (reading + checking) / producing: {(figures['reading'] + figures['checking']) / figures['producing']:.2f}"
    )


if __name__ == "__main__":
    main()
