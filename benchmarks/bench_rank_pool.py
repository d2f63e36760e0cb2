"""Per-case cost in the persistent rank pool against a fresh process group per case (issue 3).

One case is what a conformance example costs the ranks: build the sampler from the
group, iterate it, run a DataLoader over it and all-reduce the batch count. The pool
pays its start-up once and then one round trip per case; a harness that spawns a
process group per test pays start-up, the case and teardown every time. Prints, for
W = 2, 4, 8, both costs and their ratio (target: the pool at least 100x faster at W=4).

Run from the repo root: python benchmarks/bench_rank_pool.py [--cases 50] [--spawns 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sampler_conformance.execution.rank_pool import RankPool  # noqa: E402
from sampler_conformance.subjects.index_sampler.case import IndexCase  # noqa: E402
from sampler_conformance.subjects.index_sampler.contracts import TORCH  # noqa: E402
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC  # noqa: E402
from sampler_conformance.subjects.index_sampler.scenarios.loader import RunLoader  # noqa: E402

WORLD_SIZES = (2, 4, 8)
TIMEOUT_S = 120.0
DATASET_SIZE = 1_000
BATCH_SIZE = 8
TARGET_RATIO_AT_4 = 100


def one_case(world_size: int, k: int) -> RunLoader:
    case = IndexCase(dataset_size=DATASET_SIZE, world_size=world_size, seed=k, batch_size=BATCH_SIZE)
    return RunLoader(DEFAULT_SPEC, TORCH, case, epochs=(k,))


def in_pool(world_size: int, cases: int) -> tuple[float, float]:
    """(start-up seconds, median seconds per case) in one live pool."""
    pool = RankPool(world_size, "gloo", TIMEOUT_S)
    try:
        start = time.perf_counter()
        pool.start()
        startup = time.perf_counter() - start
        pool.request(one_case(world_size, 0))  # warm-up: first DataLoader, first collective
        costs = []
        for k in range(cases):
            start = time.perf_counter()
            pool.request(one_case(world_size, k))
            costs.append(time.perf_counter() - start)
        return startup, statistics.median(costs)
    finally:
        pool.close()


def spawn_per_case(world_size: int, spawns: int) -> float:
    """Median seconds for start-up, one case and teardown of a fresh group."""
    costs = []
    for k in range(spawns):
        start = time.perf_counter()
        pool = RankPool(world_size, "gloo", TIMEOUT_S)
        try:
            pool.request(one_case(world_size, k))
        finally:
            pool.close()
        costs.append(time.perf_counter() - start)
    return statistics.median(costs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50, help="cases timed in each pool (default 50)")
    parser.add_argument("--spawns", type=int, default=2, help="fresh groups timed per world size (default 2)")
    args = parser.parse_args()
    print(f"one case: DistributedSampler over N={DATASET_SIZE}, DataLoader(batch_size={BATCH_SIZE}), all_reduce; gloo")
    print(f"{'W':>3} {'pool start':>11} {'pool/case':>11} {'spawn/case':>11} {'ratio':>8}")
    ratios = {}
    for world_size in WORLD_SIZES:
        startup, per_case = in_pool(world_size, args.cases)
        fresh = spawn_per_case(world_size, args.spawns)
        ratios[world_size] = fresh / per_case
        print(f"{world_size:>3} {startup:>10.2f}s {per_case * 1e3:>9.1f}ms {fresh:>10.2f}s {ratios[world_size]:>7.0f}x")
    met = ratios[4] >= TARGET_RATIO_AT_4
    print(
        f"target: pool >= {TARGET_RATIO_AT_4}x faster than spawn-per-case at W=4: {'met' if met else 'NOT met'} "
        f"({ratios[4]:.0f}x)"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
