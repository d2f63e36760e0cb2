"""The streaming dataset's invariants: every rank's dataset read one epoch or more, on drawn
layouts, all (rank, worker) pairs judged together. Each test runs where its invariant is
declared to (``ranks``): on simulated ranks, each read the way a DataLoader with workers reads
it, and in real process groups, where every rank builds its own dataset in its own process and
reads it through a real DataLoader (workers from a fork server, persistent or not), the ranks
in lock step (``harness.subjects.iterable_dataset.loading``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_conformance.core.evidence import Violation, expect_holds, not_promised
from sampler_conformance.core.frequencies import FalseAlarmBudget
from sampler_conformance.execution.scenario import Ranks
from sampler_conformance.pytest_plugin import statistics
from sampler_conformance.pytest_plugin.crashes import judge_only_if
from sampler_conformance.pytest_plugin.ranks import (
    groups_where_simulation_cannot,
    in_groups_only,
    simulated_only,
    through_loader_workers,
)
from sampler_conformance.subjects.iterable_dataset.case import StreamCase
from sampler_conformance.subjects.iterable_dataset.checks import (
    ONE_EPOCH,
    check_even_batches,
    check_no_starved_worker,
    check_same_items,
)
from sampler_conformance.subjects.iterable_dataset.draws import (
    EDGE_SIZE,
    MAX_DATASET_SIZE,
    MAX_WORKERS,
    MIX_FREQUENCY_ITEMS,
    SEED_LIMIT,
    consecutive_epochs,
    draw_stream_case,
    epochs,
    most_items,
    other_num_workers,
)
from sampler_conformance.subjects.iterable_dataset.fixtures import requires_building_another_ranks, requires_parameter
from sampler_conformance.subjects.iterable_dataset.mix_checks import (
    check_mix_frequencies,
    check_pairs_independent,
    pairs_comparable,
)
from sampler_conformance.subjects.iterable_dataset.order_checks import (
    MIN_COMPARABLE_ITEMS,
    RESHUFFLE_EPOCHS,
    check_deterministic,
    check_ranks_agree,
    check_reshuffles,
    check_same_stream,
    check_seed_effective,
)
from sampler_conformance.subjects.iterable_dataset.runs import StreamEpoch
from sampler_conformance.subjects.iterable_dataset.scenarios import read_epochs, read_twice


@pytest.mark.invariant("stream_runs")
@given(data=st.data())
def test_stream_runs(ranks, stream_plug, contract, data):
    """Small and empty datasets, one shard or many, more workers than items: each epoch ends
    without raising; also read without set_epoch, as an evaluation loop or a script that never
    calls it reads (the epoch None)."""
    case = draw_stream_case(data, stream_plug, contract, world_size=ranks.world_size, max_dataset_size=EDGE_SIZE)
    epoch = data.draw(st.one_of(st.none(), epochs()), label="epoch")
    (epoch_read,) = read_epochs(ranks, stream_plug, contract, case, [epoch])
    expect_holds(epoch_read.observation, [])


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH.flags])
@given(data=st.data())
def test_stream_epoch(ranks, stream_plug, contract, flag, data):
    """One epoch (0 to 3 workers), all (rank, worker) pairs together."""
    case = draw_stream_case(
        data, stream_plug, contract, world_size=ranks.world_size, max_dataset_size=most_items(ranks)
    )
    (epoch,) = read_epochs(ranks, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, ONE_EPOCH[flag].judge(epoch))


@pytest.mark.invariant("even_batches")
@given(data=st.data())
def test_even_batches(ranks, stream_plug, contract, data):
    """N a multiple of W x workers x batch_size (any N, if the contract pads or drops): every
    rank runs the same number of batches; in real groups the ranks, stepping together, run out
    at the same step."""
    case = draw_stream_case(
        data,
        stream_plug,
        contract,
        world_size=ranks.world_size,
        max_dataset_size=most_items(ranks),
        divisible=not contract.equalizes,
    )
    (epoch,) = read_epochs(ranks, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_even_batches(epoch))


@pytest.mark.invariant("no_starved_worker")
@given(data=st.data())
def test_no_starved_worker(ranks, stream_plug, contract, data):
    """At least one non-empty shard per (rank, worker) pair: every pair yields something."""
    case = draw_stream_case(
        data, stream_plug, contract, world_size=ranks.world_size, max_dataset_size=most_items(ranks), fed=True
    )
    (epoch,) = read_epochs(ranks, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_no_starved_worker(epoch))


@pytest.mark.invariant("same_items_any_workers")
@simulated_only
@given(data=st.data())
def test_same_items_any_workers(ranks, stream_plug, contract, data):
    """The same case read by another number of workers: the epoch's items, all ranks together,
    are the same (persistent workers: ``test_same_items_through_persistent_workers``)."""
    case = draw_stream_case(data, stream_plug, contract, world_size=ranks.world_size)
    chosen = [data.draw(epochs(), label="epoch")]
    (first,) = read_epochs(ranks, stream_plug, contract, case, chosen)
    other = case.with_(num_workers=data.draw(other_num_workers(case.num_workers, 0), label="other num_workers"))
    (second,) = read_epochs(ranks, stream_plug, contract, other, chosen)
    expect_holds(second.observation, check_same_items(first, second))


@pytest.mark.invariant("same_items_any_workers")
@in_groups_only
@given(data=st.data())
def test_same_items_through_persistent_workers(ranks, stream_plug, contract, data):
    """Two epochs read by fresh workers, then by persistent workers of another count (which only
    real loaders have): the same items each epoch."""
    case = draw_stream_case(
        data, stream_plug, contract, world_size=ranks.world_size, max_dataset_size=most_items(ranks)
    )
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    fresh = read_epochs(ranks, stream_plug, contract, case, chosen)
    other = data.draw(other_num_workers(case.num_workers, 1), label="other num_workers")
    kept = read_epochs(ranks, stream_plug, contract, case.with_(num_workers=other, persistent_workers=True), chosen)
    for fresh_epoch, kept_epoch in zip(fresh, kept, strict=True):
        expect_holds(kept_epoch.observation, check_same_items(fresh_epoch, kept_epoch))


@pytest.mark.invariant("stream_agrees")
@given(data=st.data())
def test_stream_agrees_across_processes(ranks, stream_plug, contract, data):
    """Every rank's process builds rank 0's dataset for the same case: all read the same stream."""
    requires_building_another_ranks(ranks, stream_plug)
    case = draw_stream_case(
        data, stream_plug, contract, world_size=ranks.world_size, num_workers=0, max_dataset_size=most_items(ranks)
    )
    (epoch,) = read_epochs(ranks, stream_plug, contract, case, [data.draw(epochs(), label="epoch")], as_rank=0)
    expect_holds(epoch.observation, check_ranks_agree(epoch))


@pytest.mark.invariant("stream_deterministic")
@groups_where_simulation_cannot
@given(data=st.data())
def test_stream_deterministic(ranks, stream_plug, contract, data):
    """Two fresh datasets for the same case, read the same way, yield the same stream on every rank."""
    case = draw_stream_case(
        data, stream_plug, contract, world_size=ranks.world_size, max_dataset_size=most_items(ranks)
    )
    first, second = read_twice(ranks, stream_plug, contract, case, data.draw(epochs(), label="epoch"))
    expect_holds(second.observation, check_deterministic(first, second))


@pytest.mark.invariant("stream_seed_effective")
@given(data=st.data())
def test_stream_seed_effective(ranks, stream_plug, contract, data):
    """shuffle=True, one epoch, datasets built with RESHUFFLE_EPOCHS consecutive seeds: not all in one order."""
    requires_parameter(stream_plug, "seed")
    requires_parameter(stream_plug, "shuffle")
    case = draw_stream_case(
        data,
        stream_plug,
        contract,
        world_size=ranks.world_size,
        shuffle=True,
        min_dataset_size=MIN_COMPARABLE_ITEMS,
        max_dataset_size=most_items(ranks),
    )
    epoch = data.draw(epochs(), label="epoch")
    seeds = [(case.seed + k) % SEED_LIMIT for k in range(RESHUFFLE_EPOCHS)]
    read = [read_epochs(ranks, stream_plug, contract, case.with_(seed=seed), [epoch])[0] for seed in seeds]
    expect_holds(read[-1].observation, check_seed_effective(read))


@pytest.mark.invariant("stream_reshuffles")
@groups_where_simulation_cannot
@given(data=st.data())
def test_stream_reshuffles(ranks, stream_plug, contract, data):
    """shuffle=True, RESHUFFLE_EPOCHS consecutive epochs: not all in one order. Real groups read
    them without workers here (``test_stream_reshuffles_through_workers`` reads through them)."""
    requires_parameter(stream_plug, "shuffle")
    case = draw_stream_case(
        data,
        stream_plug,
        contract,
        world_size=ranks.world_size,
        num_workers=None if ranks.world_size is None else 0,
        shuffle=True,
        min_dataset_size=MIN_COMPARABLE_ITEMS,
        max_dataset_size=most_items(ranks),
    )
    read, violations = _reshuffled(
        ranks, stream_plug, contract, case, data.draw(consecutive_epochs(RESHUFFLE_EPOCHS), label="epochs")
    )
    expect_holds(read[-1].observation, violations)


@pytest.mark.invariant("stream_reshuffles")
@through_loader_workers
@given(data=st.data())
def test_stream_reshuffles_through_workers(ranks, stream_plug, contract, data):
    """shuffle=True, RESHUFFLE_EPOCHS consecutive epochs read by fresh workers: not all in one order."""
    case = _shuffled_through_workers(data, ranks, stream_plug, contract, MIN_COMPARABLE_ITEMS)
    read, violations = _reshuffled(
        ranks, stream_plug, contract, case, data.draw(consecutive_epochs(RESHUFFLE_EPOCHS), label="epochs")
    )
    expect_holds(read[-1].observation, violations)


@pytest.mark.invariant("epoch_reaches_workers")
@given(data=st.data())
def test_epoch_reaches_persistent_workers(ranks, stream_plug, contract, data):
    """Two epochs through persistent workers yield what fresh workers yield for the same epochs.
    Drawn apart, not one after the other: a worker's copy that counts its own epochs on from
    the first one (litdata's) agrees with fresh workers only while they come in a row."""
    case = _shuffled_through_workers(data, ranks, stream_plug, contract)
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    fresh = read_epochs(ranks, stream_plug, contract, case, chosen)
    kept = read_epochs(ranks, stream_plug, contract, case.with_(persistent_workers=True), chosen)
    if not fresh[0].has_set_epoch:
        not_promised(
            "the dataset has no set_epoch(): no epoch to reach the workers (stream_reshuffles judges its passes)"
        )
    for fresh_epoch, kept_epoch in zip(fresh, kept, strict=True):
        differ = check_same_stream(
            fresh_epoch,
            kept_epoch,
            "epoch_reaches_workers",
            f"after set_epoch({kept_epoch.case.epoch}), fresh workers and persistent workers read different streams",
            readings=("fresh workers", "persistent workers"),
        )
        expect_holds(kept_epoch.observation, [replace(v, message=v.message + KEPT_COPY) for v in differ])


# Why persistent workers miss an epoch the main process's dataset was given, and the fix.
KEPT_COPY = (
    ". Each persistent worker keeps the copy of the dataset it started with: the epoch must reach that copy (a "
    "shared value the copies read in __iter__), not only the main process's"
)


def _reshuffled(
    ranks: Ranks, plug, contract, case: StreamCase, chosen: list[int]
) -> tuple[tuple[StreamEpoch, ...], list[Violation]]:
    """The epochs ``chosen`` of ``case``, and ``check_reshuffles``' verdict on them; where they
    repeat through workers, read again without them, to say why."""
    read = read_epochs(ranks, plug, contract, case, chosen)
    violations = check_reshuffles(read)
    if violations and case.num_workers:
        alone = read_epochs(ranks, plug, contract, case.with_(num_workers=0), chosen)
        violations = check_reshuffles(read, without_workers=alone)
    return read, violations


def _shuffled_through_workers(data, ranks: Ranks, stream_plug, contract, min_dataset_size=0) -> StreamCase:
    """A case with shuffle=True read by 1 to 3 workers per rank."""
    requires_parameter(stream_plug, "shuffle")
    return draw_stream_case(
        data,
        stream_plug,
        contract,
        world_size=ranks.world_size,
        num_workers=data.draw(st.integers(1, MAX_WORKERS), label="num_workers"),
        shuffle=True,
        min_dataset_size=min_dataset_size,
        max_dataset_size=most_items(ranks),
    )


@pytest.mark.invariant("mix_frequencies")
@given(data=st.data())
def test_mix_frequencies(ranks, stream_plug, contract, data):
    """One epoch of a mix of MIX_FREQUENCY_ITEMS items in sources sized by their weights, so that
    the pairs read most of them: all (rank, worker) pairs' items together, counted by source,
    follow the weights, by a test valid however each pair decides to stop. Its examples share
    the certification's false-alarm budget: a conforming mix fails it by chance with
    probability at most 1e-6. At most 8 pairs: each pair's share of a light source must last
    it a while, or the pair stops within a few draws and the test has little to go on."""
    world_size = ranks.world_size or data.draw(st.integers(1, 4), label="W (world size)")
    case = draw_stream_case(
        data,
        stream_plug,
        contract,
        world_size=world_size,
        num_workers=data.draw(st.integers(0, 1), label="num_workers"),
        min_dataset_size=MIX_FREQUENCY_ITEMS,
        max_dataset_size=MIX_FREQUENCY_ITEMS,
        sized_mix=True,
    )
    (epoch,) = read_epochs(ranks, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    violations, verdict = check_mix_frequencies(epoch, FalseAlarmBudget(tests=settings().max_examples).per_test)
    statistics.record(verdict)
    expect_holds(epoch.observation, violations)


@pytest.mark.invariant("mix_pairs_independent")
@given(data=st.data())
def test_mix_pairs_independent(ranks, stream_plug, contract, data):
    """One epoch of a mix of sources of equal sizes and weights, MAX_DATASET_SIZE items read
    by few (rank, worker) pairs (at most 4 where W <= 4), so that each reads enough to tell:
    no two pairs draw the same sources in the same order."""
    world_size = ranks.world_size or data.draw(st.integers(1, 2), label="W (world size)")
    num_workers = data.draw(st.integers(0 if world_size > 1 else 2, max(4 // world_size, 1)), label="num_workers")
    case = draw_stream_case(
        data,
        stream_plug,
        contract,
        world_size=world_size,
        num_workers=num_workers,
        min_dataset_size=MAX_DATASET_SIZE,
        max_dataset_size=MAX_DATASET_SIZE,
        even_mix=True,
    )
    (epoch,) = read_epochs(ranks, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    judge_only_if(pairs_comparable(epoch))
    expect_holds(epoch.observation, check_pairs_independent(epoch))
