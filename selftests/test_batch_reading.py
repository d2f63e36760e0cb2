"""One rule for what a batch is, in every subject that yields batches (docs/contracts.md,
"What a batch is"): a list of int indices, or a 1-D integer tensor or array."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from sampler_conformance.adapters.torch_batches import PerRankBatches, per_rank
from sampler_conformance.subjects.common.reading import BadIndex, batch_array, batch_arrays

from .suite_run import certify


@pytest.mark.parametrize(
    "batch",
    [[3, 1], (3, 1), torch.tensor([3, 1]), torch.tensor([3, 1], dtype=torch.int32), np.array([3, 1])],
    ids=["list", "tuple", "int64 tensor", "int32 tensor", "int array"],
)
def test_a_list_or_a_1d_integer_tensor_is_a_batch(batch):
    assert batch_array(batch, 0).tolist() == [3, 1]
    _, (read,) = batch_arrays([batch])
    assert read.tolist() == [3, 1]


@pytest.mark.parametrize(
    "batch",
    [torch.tensor([3.0, 1.0]), torch.tensor([[3, 1]]), torch.tensor([True]), np.array([0.5]), 3, {3, 1}],
    ids=["float tensor", "2-D tensor", "bool tensor", "float array", "one int", "set"],
)
def test_anything_else_is_not(batch):
    with pytest.raises(BadIndex, match="as batch 0; a batch is a list of indices, or a 1-D integer tensor"):
        batch_arrays([batch])


class TensorBatches(PerRankBatches):
    """torch's reference for rank_batches, each batch a tensor as opacus' samplers yield."""

    def __iter__(self) -> Iterator[torch.Tensor]:  # type: ignore[override]
        return (torch.tensor(batch) for batch in super().__iter__())


def tensor_batches(dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False, batch_size=1):
    reference = per_rank(dataset, num_replicas, rank, shuffle, seed, drop_last, batch_size)
    return TensorBatches(reference.shares, batch_size, drop_last)


def test_an_index_sampler_that_yields_tensor_batches_holds_valid_indices(pytester):
    """Under rank_batches, as under the batch samplers' contracts: before the one rule,
    valid_indices failed it for a tensor batch."""
    run = certify(pytester, f"{__name__}:tensor_batches", "--contract=rank_batches", "-k", "valid_indices")
    assert run.statuses["valid_indices"] == "held", run.explain()
