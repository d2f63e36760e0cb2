"""Speed figures for the weighted-sampler and batch-sampler subjects (issue 20).

Prints, in one run: the wall time of the default certification (the console script's run,
the `dev` profile, in-process and in real groups) of each weighted and batch contract's
reference, and of the real samplers of those contracts installed here, against a 60 s target
(2 cores). The frequency test's own figures are benchmarks/bench_frequencies.py's.

Run from the repo root: python benchmarks/bench_factory_contracts.py
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CERTIFICATION_TARGET_S = 60.0
# (spec, contract, the module it needs installed)
CERTIFICATIONS = (
    ("sampler_conformance.adapters.torch_weighted:make", "weighted", "torch"),
    ("sampler_conformance.adapters.torch_weighted:make_partitioned", "weighted_partition", "torch"),
    ("sampler_conformance.adapters.lightning:WeightedDistributedSamplerWrapper", "weighted", "lightning_fabric"),
    ("sampler_conformance.adapters.monai:DistributedWeightedRandomSampler", "weighted_partition", "monai"),
    ("sampler_conformance.adapters.torchdata:MultiNodeWeightedSampler", "weighted", "torchdata"),
    ("sampler_conformance.adapters.budget_batches:make", "dynamic_batches", "torch"),
    ("sampler_conformance.adapters.budget_batches:poisson", "poisson", "torch"),
    ("sampler_conformance.adapters.lhotse:SimpleCutSampler", "dynamic_batches", "lhotse"),
    ("sampler_conformance.adapters.lhotse:DynamicBucketingSampler", "dynamic_batches", "lhotse"),
    ("sampler_conformance.adapters.speechbrain:DynamicBatchSampler", "dynamic_batches", "speechbrain"),
    ("sampler_conformance.adapters.opacus:DistributedUniformWithReplacementSampler", "poisson", "opacus"),
)


def certify(spec: str, contract: str) -> float:
    command = [sys.executable, "-m", "sampler_conformance.cli", spec, f"--contract={contract}", "-q"]
    environment = {key: value for key, value in os.environ.items() if key != "CI"}  # the default profile, dev
    start = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800, env=environment)
    elapsed = time.perf_counter() - start
    verdict = next((line for line in result.stdout.splitlines() if line.startswith("VERDICT")), "no verdict")
    print(
        f"  {elapsed:5.1f} s ({elapsed / CERTIFICATION_TARGET_S:.2f} of the target), exit {result.returncode}: {verdict}"
    )
    return elapsed


def main() -> None:
    print(f"default certifications, against {CERTIFICATION_TARGET_S:.0f} s each:")
    for spec, contract, module in CERTIFICATIONS:
        if importlib.util.find_spec(module) is None:
            print(f"  {spec}: skipped, {module} is not installed here")
            continue
        certify(spec, contract)


if __name__ == "__main__":
    main()
