"""The aspect_ratio contract: its checks' words, its reference on fixed cases, and the verdict
on mmdet's AspectRatioBatchSampler (ported in corpus/mmdet.py) with its bug reproduced."""

from __future__ import annotations

import numpy as np
import pytest
from torch.utils.data import Sampler

from sampler_conformance.adapters.torch_batches import AspectRatioBatches
from sampler_conformance.core.case import Observation
from sampler_conformance.subjects.common.index_dataset import IndexDataset
from sampler_conformance.subjects.index_sampler.aspect_checks import check_aspect_grouped, check_aspect_share
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.contracts import ASPECT_RATIO

from .corpus.mmdet import AspectRatioBatchSampler, SizedImages, aspect_ratio_over_distributed
from .reproduced import assert_reproduced
from .suite_run import certify

PORT = "selftests.corpus.mmdet:aspect_ratio_over_distributed"


def _batched(case: IndexCase, make) -> Observation:
    batches = tuple(
        tuple(np.asarray(b, dtype=np.int64) for b in make(case.world_size, rank)) for rank in range(case.world_size)
    )
    indices = tuple(np.concatenate(b) if b else np.empty(0, np.int64) for b in batches)
    return Observation(case, indices, tuple(len(b) for b in batches), batches=batches)


def _make(case: IndexCase, factory):
    def make(world, rank):
        dataset = IndexDataset(case.dataset_size)
        return factory(
            dataset,
            world,
            rank,
            seed=case.seed,
            drop_last=case.drop_last,
            batch_size=case.batch_size,
            aspects=case.aspects().tolist(),
        )

    return make


@pytest.mark.parametrize("world_size", [1, 2, 3, 5])
def test_the_reference_keeps_both_invariants(world_size):
    """Every N up to 24, batch sizes 1 to 5, no portrait to all, with drop_last or without."""
    for n in range(25):
        for batch_size in range(1, 6):
            for portraits in {0, n // 3, n}:
                for drop_last in (False, True):
                    case = IndexCase(n, world_size, drop_last=drop_last, batch_size=batch_size, portraits=portraits)
                    observation = _batched(case, _make(case, AspectRatioBatches))
                    assert check_aspect_grouped(observation, ASPECT_RATIO) == [], case
                    assert check_aspect_share(observation, ASPECT_RATIO) == [], case


def test_mmdet_drops_a_leftover_batch_of_exactly_batch_size():
    """mmdet's drop_last bug in plain Python: two portrait and two landscape items, B=4: the
    buckets' leftovers join to one batch of exactly 4, which `len(left_data) <= batch_size`
    drops under drop_last, though len() counts it."""
    dataset = SizedImages(range(4), [0, 1, 0, 1])
    sampler = AspectRatioBatchSampler(_Ordered(dataset), batch_size=4, drop_last=True)
    assert (list(sampler), len(sampler)) == ([], 1)
    sampler = AspectRatioBatchSampler(_Ordered(dataset), batch_size=4, drop_last=False)
    assert (list(sampler), len(sampler)) == ([[0, 2, 1, 3]], 1)


class _Ordered(Sampler[int]):
    """The dataset's order: what a rank's share of DefaultSampler is at W=1 without shuffle."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __iter__(self):
        return iter(range(len(self.dataset)))

    def __len__(self):
        return len(self.dataset)


def test_aspect_checks_say_which_batch_and_rank():
    """Rank 0 reads a mixed batch before its tail; then a rank that drops a full batch."""
    case = IndexCase(dataset_size=12, world_size=1, batch_size=2, portraits=6)
    aspects = case.aspects()
    portrait, landscape = np.flatnonzero(aspects == 0), np.flatnonzero(aspects == 1)
    batches = ((np.array([portrait[0], landscape[0]]), portrait[1:3], portrait[3:5], landscape[1:3], landscape[3:5]),)
    mixed = Observation(case, (np.concatenate(batches[0]),), (5,), batches=batches)
    (violation,) = check_aspect_grouped(mixed, ASPECT_RATIO)
    assert violation.message.startswith(
        f"rank 0's batch 0 of 5 mixes 1 portrait and 1 landscape items, before the rank's tail (its last two "
        f"batches), {[int(portrait[0]), int(landscape[0])]}: "
    ), violation
    (violation,) = check_aspect_share(mixed, ASPECT_RATIO)  # 10 of the share's 12 items
    assert violation.message == (
        "each rank's batches should hold its padded share, 12 items (ceil(N/W)=12), got rank 0: 10"
    ), violation

    dropped = case.with_(world_size=2, drop_last=True)
    observation = _batched(dropped, _make(dropped, aspect_ratio_over_distributed))
    share = [items.size for items in observation.indices]
    violations = check_aspect_share(observation, ASPECT_RATIO)
    assert share != [6, 6] and violations, (share, observation.batches)
    assert violations[0].message.startswith(
        "each rank's batches should hold its padded share, 6 items (ceil(N/W)=6 less its remainder by batch_size=2)"
    ), violations


def test_mmdet_port_fails_for_its_drop_last_bug_alone(pytester):
    """In-process, under aspect_ratio: its buckets group as promised; the leftover batch of
    exactly B it drops under drop_last breaks the share, len() and the equal batch counts."""
    # Under quick: the batch-count test's five draws hold no leftover batch of exactly B.
    run = certify(pytester, PORT, "--contract=aspect_ratio", "--repro=on", profile="quick")
    assert run.exit_code == 1, run.explain()
    assert run.failed_invariants == {"aspect_share", "len_matches_iter", "equal_batches"}, run.explain()
    assert "drop_last=True" in run.failure_text("test_per_epoch_invariant"), run.explain()
    assert_reproduced(run, ASPECT_RATIO.reference)  # each failure's script: 1 on the port, 0 on the reference
