"""NCCL: one GPU per rank (cuda:LOCAL_RANK), CUDA tensors in the collectives.

Runs whatever --backend says; skipped, with the reason, where there are fewer CUDA
devices than ranks (every CPU-only machine). On a GPU node:
pytest --backend=nccl --world-sizes=8 runs all of conformance/ over NCCL.
"""

from __future__ import annotations

import pytest

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.loader_checks import loader_violations
from sampler_conformance.subjects.index_sampler.scenarios.loader import run_loader

BATCH_SIZE = 4


@pytest.mark.nccl
@pytest.mark.invariant("equal_batches")
def test_batch_counts_all_reduced_over_nccl(group, world_size, sampler_plug, contract):
    """A DataLoader per rank, two epochs with set_epoch; the batch counts all-reduced on the GPUs agree."""
    assert group.backend == "nccl"
    case = IndexCase(dataset_size=10 * world_size + 1, world_size=world_size, batch_size=BATCH_SIZE).within(contract)
    batch_size = None if contract.yields_batches else BATCH_SIZE
    for run in run_loader(group, sampler_plug.spec, contract, case, (0, 1)):
        expect_holds(run.sampler, loader_violations(run, batch_size, loader_drop_last=False))
