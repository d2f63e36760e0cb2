"""The cost probe's projection against a direct measurement at the largest size this machine
allows (issue 54's proof).

For each sampler: the probe's two sweeps (N = 1e4, 1e5, ... on 8 ranks and at a fixed share,
``harness.execution.cost.sweeps``), the projection they give at the target (N, W) and at
N = 3.5e9, W = 1,024, and rank 0 measured directly at the target, in a child of its own as
the probe measures a size, without the probe's 4 GiB limit: its peak memory above what the
child held before the build, and its time to the first index. The ratio measured/projected
says how far the fit carries. torch's DistributedSampler is measured at N = 1e8 (it holds
the permutation whole: about 5 GB), the lazy reference at 3.5e9 itself.

Run from the repo root: python benchmarks/bench_projection.py
"""

from __future__ import annotations

import argparse

from sampler_conformance.core.cost import Cost, large, memory, seconds
from sampler_conformance.execution import cost
from sampler_conformance.subjects import SUBJECTS, contract_named

GIB = 1 << 30
PRODUCTION = (3.5e9, 1024)  # pytorch/pytorch #103339's job
TARGETS = {  # spec -> the (N, W) measured directly
    "torch.utils.data.distributed:DistributedSampler": (10**8, 1024),
    "sampler_conformance.adapters.lazy_permutation:LazyDistributedSampler": (int(3.5e9), 1024),
}


def probed(spec: str) -> cost.Probed:
    subject = SUBJECTS["index_sampler"]
    assert subject.cost_probe is not None
    return cost.Probed(spec, contract_named("torch"), subject.load, subject.cost_probe)


def ratio(measured: float | None, projected: float | None) -> str:
    return f"{measured / projected:.2f}" if measured and projected else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-gib", type=float, default=16, help="the direct measurement's memory limit")
    arguments = parser.parse_args()
    for spec, (size, world) in TARGETS.items():
        readings = cost.sweeps(probed(spec), (0, 0))
        fitted = Cost(readings["on_world"], readings["at_share"])
        print(f"{spec}")
        print(f"  {fitted.lines('index', None)[0]}")
        for n, w in (PRODUCTION, (size, world)):
            peak, first = fitted.projected(n, w)
            print(f"  projected at N={large(n)}, W={w:,}: {memory(peak)}, first index {seconds(first)}")
        direct = cost.measure(probed(spec), size, world, limit_bytes=int(arguments.limit_gib * GIB), wait_s=600)
        if direct.stopped:
            print(f"  measured at N={large(size)}, W={world:,}: {direct.stopped}")
            continue
        peak, first = fitted.projected(size, world)
        print(
            f"  measured at N={large(size)}, W={world:,}: {memory(direct.peak_bytes)}, first index "
            f"{seconds(direct.first_s)} (measured/projected: memory {ratio(direct.peak_bytes, peak)}, "
            f"time {ratio(direct.first_s, first)})"
        )


if __name__ == "__main__":
    main()
