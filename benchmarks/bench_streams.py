"""Speed figures for the streaming-dataset subject (issue 19).

Prints, in one run:
1. the wall time of the default certification (the console script's run: in-process and real
   gloo groups of 1, 2 and 4 ranks, the `dev` profile) of Hugging Face datasets'
   ``split_dataset_by_node`` under ``stream_exact``, against a 90 s target (2 cores);
2. the same certification of the suite's reference dataset under ``stream``;
3. what one epoch of a real DataLoader with 2 workers costs over a ``datasets`` stream, with
   the workers' fork server holding ``datasets`` imported (the factory's ``worker_modules``)
   and without: the ratio is why the suite preloads them.

Run from the repo root, in an environment with datasets installed:
    python benchmarks/bench_streams.py [--skip-suite]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CERTIFICATION_TARGET_S = 90.0
HF_SPEC = "sampler_conformance.adapters.hf_datasets:split_by_node"
REFERENCE_SPEC = "sampler_conformance.adapters.torch_iterable:make"
EPOCHS = 5

# One epoch of 2 workers over a datasets stream, in a fresh interpreter whose loader fork
# server preloads what argv names.
_EPOCH_COST = """
import sys, time
from torch.utils.data import DataLoader
from sampler_conformance.execution.fork_server import fork_server_context
from sampler_conformance.subjects.iterable_dataset.items import collate_ids
from sampler_conformance.adapters.hf_datasets import split_by_node
if __name__ == "__main__":
    preload = ["torch", "sampler_conformance.subjects.iterable_dataset.items", *sys.argv[2:]]
    for module in sys.argv[2:]:
        __import__(module)
    fork_server_context(preload)
    dataset = split_by_node(100, rank=0, world_size=1, seed=0, shuffle=True, shards=(range(50), range(50, 100)))
    loader = DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="forkserver", collate_fn=collate_ids)
    start = time.perf_counter()
    for _ in range(int(sys.argv[1])):
        assert sum(len(batch.ids) for batch in loader) == 100
    print((time.perf_counter() - start) / int(sys.argv[1]))
"""


def certify(spec: str, contract: str) -> float:
    command = [
        sys.executable,
        "-m",
        "sampler_conformance.cli",
        spec,
        f"--contract={contract}",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    environment = {key: value for key, value in os.environ.items() if key != "CI"}  # the default profile, dev
    start = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800, env=environment)
    elapsed = time.perf_counter() - start
    verdict = next((line for line in result.stdout.splitlines() if line.startswith("VERDICT")), "no verdict")
    print(f"  {spec} --contract={contract}: {elapsed:.1f} s, exit {result.returncode}: {verdict}")
    return elapsed


def epoch_cost(*preload: str) -> float:
    command = [sys.executable, "-c", _EPOCH_COST, str(EPOCHS), *preload]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    return float(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-suite", action="store_true", help="only time the loader epochs")
    args = parser.parse_args()
    if not args.skip_suite:
        print("default certifications (dev profile, gloo groups of 1, 2 and 4 ranks):")
        hf = certify(HF_SPEC, "stream_exact")
        print(
            f"  split_dataset_by_node: {hf:.1f} s against a target of {CERTIFICATION_TARGET_S:.0f} s "
            f"({'met' if hf <= CERTIFICATION_TARGET_S else 'MISSED'})"
        )
        certify(REFERENCE_SPEC, "stream")
    cold, warm = epoch_cost(), epoch_cost("datasets")
    print(f"one epoch, 2 workers, over a datasets stream of 100 items (mean of {EPOCHS}):")
    print(f"  workers import datasets themselves: {cold * 1000:.0f} ms")
    print(f"  workers start with datasets imported: {warm * 1000:.0f} ms ({cold / warm:.1f}x faster)")


if __name__ == "__main__":
    main()
