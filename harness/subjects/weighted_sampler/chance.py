"""How likely a conforming sampler's streams are to be alike by chance: what the checks that
streams differ (across ranks, epochs, seeds) judge by, and what the cases they read are drawn
long enough for.

Two streams are compared only where a conforming sampler's would be equal with probability at
most SAME_BY_CHANCE over all the comparisons of one example together: each pair of ranks, or
each rank across two readings, gets its share of it. A pair that could be equal more often
(ranks drawing over one shared item, a rank's partition of one item) is not judged.
"""

from __future__ import annotations

import math

import numpy as np
from torch.utils.data import DistributedSampler

from sampler_conformance.subjects.common.index_dataset import IndexDataset

from .case import WeightedCase
from .contracts import WeightedContract

# A conforming sampler fails a check that streams differ by chance with probability below
# this per example, all its comparisons together.
SAME_BY_CHANCE = 1e-12


def distributed_sampler_partitions(dataset_size: int, world_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Every rank's indices from torch's ``DistributedSampler`` (shuffled, padded) at ``epoch``:
    the partitions the ``weighted_partition`` contract draws over."""
    partitions = []
    for rank in range(world_size):
        sampler: DistributedSampler[int] = DistributedSampler(
            IndexDataset(dataset_size), num_replicas=world_size, rank=rank, shuffle=True, seed=seed
        )
        sampler.set_epoch(epoch)
        partitions.append(list(sampler))
    return partitions


def stream_laws(case: WeightedCase, contract: WeightedContract) -> list[np.ndarray]:
    """What each rank of ``case`` draws from, item by item, under ``contract``: the weights
    over the whole dataset, or (``partitioned``) those of its own DistributedSampler partition
    at the case's epoch, normalised, or the whole dataset's where its partition weighs 0."""
    whole = case.probabilities
    if not contract.partitioned:
        return [whole] * case.world_size
    weights = np.asarray(case.weights, dtype=np.float64)
    laws = []
    for part in distributed_sampler_partitions(case.dataset_size, case.world_size, case.seed, case.epoch or 0):
        mass = np.bincount(np.asarray(part, dtype=np.int64), weights=weights[part], minlength=weights.size)
        laws.append(mass / mass.sum() if mass.sum() > 0 else whole)
    return laws


def chance_alike(case: WeightedCase, contract: WeightedContract, first: np.ndarray, second: np.ndarray, length: int):
    """The probability that two streams of ``length`` draws, by the laws ``first`` and
    ``second``, are equal: (sum_i p_i q_i)^length with replacement. Without replacement, a
    bound for any ``length`` of the epoch's W x num_samples draws, wherever a rank keeps them."""
    if contract.replacement:
        return float(first @ second) ** length
    total = max(case.world_size * case.num_samples, length)
    return math.exp(_successive_log_chances(case.probabilities, total)[total - length : total].sum())


def _successive_log_chances(probabilities: np.ndarray, total: int) -> np.ndarray:
    """For each of ``total`` draws without replacement, one after another, the log of a bound
    on the chance that it repeats a given item, whatever was drawn before: the largest weight
    over the weight left, which after k draws is at least the weight less the k heaviest."""
    heaviest = np.sort(probabilities[probabilities > 0])[::-1]
    drawn_before = np.concatenate([[0.0], np.cumsum(heaviest)])[:total]
    drawn_before = np.pad(drawn_before, (0, max(0, total - drawn_before.size)), constant_values=1.0)
    left = 1.0 - drawn_before
    with np.errstate(divide="ignore"):
        return np.where(left > 1e-12, np.log(np.minimum(1.0, heaviest[0] / np.maximum(left, 1e-300))), 0.0)


def comparisons(world_size: int) -> int:
    """The most comparisons one example makes: every pair of ranks, or every rank across two readings."""
    return max(world_size * (world_size - 1) // 2, world_size)


def draws_to_tell_apart(case: WeightedCase, contract: WeightedContract, most: int) -> int | None:
    """The fewest draws per rank, at most ``most``, at which two of the case's streams over the
    whole dataset's weights are alike with at most their share of SAME_BY_CHANCE; None where
    none is (one item carries all the weight, or too few items to draw without replacement)."""
    share = math.log(SAME_BY_CHANCE / comparisons(case.world_size))
    probabilities = case.probabilities
    if contract.replacement:
        collision = float(probabilities @ probabilities)
        if collision >= 1.0 - 1e-12:
            return None
        needed = math.ceil(share / math.log(collision))
        return needed if needed <= most else None
    world = case.world_size
    logs = np.concatenate([[0.0], np.cumsum(_successive_log_chances(probabilities, world * most))])
    for draws in range(1, most + 1):
        if logs[world * draws] - logs[world * draws - draws] <= share:
            return draws
    return None
