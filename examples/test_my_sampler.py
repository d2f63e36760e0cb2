"""A user's own test file: certify samplers inside your test suite, one test per invariant.

With the suite installed (``pip install sampler-conformance``), ``pytest test_my_sampler.py``
runs one test per invariant that the contract promises, with ids like
``test_tail_padded_sampler[TailPaddedSampler-pads_from_head]``. An expected failure is a
strict xfail with its reason: the day the invariant holds, the test fails, so the
exception is removed. The certification runs once per sampler, at its first check, in a
fresh interpreter (about a minute on two cores, with the real process groups).
"""

import math

import torch
from torch.utils.data import DistributedSampler

from sampler_conformance import parametrize_with_checks


class TailPaddedSampler(DistributedSampler):
    """DistributedSampler, except that the padding repeats the *last* items of the order."""

    def __iter__(self):
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = torch.randperm(len(self.dataset), generator=generator).tolist()
        else:
            indices = list(range(len(self.dataset)))
        padding = self.total_size - len(indices)
        if padding > 0:  # drop_last=False and N not a multiple of W
            indices += (indices * math.ceil(padding / len(indices)))[-padding:]
        indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])


@parametrize_with_checks(DistributedSampler)
def test_torch_distributed_sampler(check):
    check()


@parametrize_with_checks(
    TailPaddedSampler,
    expected_failures={
        "pads_from_head": "we pad from the tail on purpose: the head is our curriculum's warm-up",
        "strided": "strided compares with the order padded from its head, which we do not do",
    },
)
def test_tail_padded_sampler(check):
    check()
