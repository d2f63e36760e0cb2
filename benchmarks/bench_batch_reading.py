"""What reading a batch sampler's epochs costs a rank, and sending them to the controller.

Prints, measured in one run: the seconds to read --epochs epochs of the Poisson reference
(``poisson``'s, at sample_rate 0.01: about a hundred one-item batches an epoch) on each of
--world-size simulated ranks, as ``ReadBatches`` reads them, of which the sampler's own
``__iter__``; then the seconds to pickle the ranks' replies, as they cross a rank's pipe, and
to unpickle them, with their size. The rate test reads up to 1,024 such epochs an example.

Run from the repo root with the package installed: python benchmarks/bench_batch_reading.py
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import pickle
import pstats
import time

from sampler_conformance.execution.scenario import CallWatch, RankContext
from sampler_conformance.subjects.batch_sampler.case import BatchCase
from sampler_conformance.subjects.batch_sampler.contracts import POISSON
from sampler_conformance.subjects.batch_sampler.plug import load_plug
from sampler_conformance.subjects.batch_sampler.scenarios import ReadBatches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--world-size", type=int, default=4)
    options = parser.parse_args()
    contract = POISSON
    plug = load_plug(contract.reference)
    world_size = options.world_size
    case = BatchCase(dataset_size=100, world_size=world_size, seed=0, lengths=(1,) * 100, sample_rate=0.01)
    scenario = ReadBatches(plug.spec, contract, case, tuple(range(options.epochs)))
    watch = CallWatch.create(multiprocessing)

    def read() -> list:
        return [scenario.run(RankContext(rank, world_size, plug, watch)) for rank in range(world_size)]

    start = time.perf_counter()
    replies = read()
    reading = time.perf_counter() - start
    profile = cProfile.Profile()  # a second reading, for the sampler's share of it
    profile.runcall(read)
    stats = pstats.Stats(profile).stats.items()  # type: ignore[attr-defined]
    in_sampler = sum(timing[3] for (path, _, name), timing in stats if name == "__iter__" and "adapters" in path)
    profiled = sum(timing[2] for _, timing in stats)
    start = time.perf_counter()
    sent = pickle.dumps(replies)
    pickling = time.perf_counter() - start
    start = time.perf_counter()
    pickle.loads(sent)
    unpickling = time.perf_counter() - start
    print(
        f"{options.epochs} epochs on {world_size} ranks: read in {reading:.2f} s; profiled, "
        f"{in_sampler / profiled:.0%} of it in the sampler's __iter__"
    )
    print(f"sent as {len(sent):,} bytes: pickled in {pickling:.3f} s, unpickled in {unpickling:.3f} s")


if __name__ == "__main__":
    main()
