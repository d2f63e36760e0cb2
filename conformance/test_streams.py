"""The streaming dataset's invariants in real process groups: every rank builds its own
dataset in its own process and reads it through a real DataLoader (workers from a fork
server, persistent or not), the ranks in lock step (``harness.subjects.iterable_dataset.loading``).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds, not_applicable, not_promised
from sampler_conformance.subjects.iterable_dataset.checks import (
    MIN_COMPARABLE_ITEMS,
    ONE_EPOCH,
    RESHUFFLE_EPOCHS,
    check_deterministic,
    check_even_batches,
    check_no_starved_worker,
    check_ranks_agree,
    check_reshuffles,
    check_same_items,
    check_same_stream,
)
from sampler_conformance.subjects.iterable_dataset.draws import (
    EDGE_SIZE,
    MAX_WORKERS,
    consecutive_epochs,
    draw_stream_case,
    epochs,
    other_num_workers,
)
from sampler_conformance.subjects.iterable_dataset.fixtures import requires_parameter
from sampler_conformance.subjects.iterable_dataset.scenarios import read_epochs, read_twice

from .examples import round_trips, with_workers

# Real loaders read every batch with an all-reduce: keep N where that is quick.
MAX_GROUP_DATASET_SIZE = 120


@pytest.mark.invariant("stream_runs")
@round_trips
@given(data=st.data())
def test_stream_runs_in_groups(group, world_size, stream_plug, contract, data):
    """Small and empty datasets through real DataLoaders, more workers than items: each epoch ends without raising."""
    case = draw_stream_case(data, stream_plug, world_size=world_size, max_dataset_size=EDGE_SIZE)
    (epoch,) = read_epochs(group, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, [])


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH])
@round_trips
@given(data=st.data())
def test_stream_epoch_in_groups(group, world_size, stream_plug, contract, flag, data):
    """One epoch through real DataLoaders (0 to 3 workers), all (rank, worker) pairs together."""
    case = draw_stream_case(data, stream_plug, world_size=world_size, max_dataset_size=MAX_GROUP_DATASET_SIZE)
    (epoch,) = read_epochs(group, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, ONE_EPOCH[flag](epoch))


@pytest.mark.invariant("even_batches")
@round_trips
@given(data=st.data())
def test_even_batches_in_lock_step(group, world_size, stream_plug, contract, data):
    """N a multiple of W x workers x batch_size (any N, if the contract pads or drops): the ranks, stepping
    together, run out at the same step."""
    case = draw_stream_case(
        data,
        stream_plug,
        world_size=world_size,
        max_dataset_size=MAX_GROUP_DATASET_SIZE,
        divisible=not contract.equalizes,
    )
    (epoch,) = read_epochs(group, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_even_batches(epoch))


@pytest.mark.invariant("no_starved_worker")
@round_trips
@given(data=st.data())
def test_no_starved_worker_in_groups(group, world_size, stream_plug, contract, data):
    """At least one non-empty shard per (rank, worker) pair: every real worker yields something."""
    case = draw_stream_case(data, stream_plug, world_size=world_size, max_dataset_size=MAX_GROUP_DATASET_SIZE, fed=True)
    (epoch,) = read_epochs(group, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_no_starved_worker(epoch))


@pytest.mark.invariant("same_items_any_workers")
@round_trips
@given(data=st.data())
def test_same_items_any_workers_in_groups(group, world_size, stream_plug, contract, data):
    """Two epochs read by fresh workers, then by persistent workers of another count: the same items each epoch."""
    case = draw_stream_case(data, stream_plug, world_size=world_size, max_dataset_size=MAX_GROUP_DATASET_SIZE)
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    fresh = read_epochs(group, stream_plug, contract, case, chosen)
    other = data.draw(other_num_workers(case.num_workers, 1), label="other num_workers")
    kept = read_epochs(group, stream_plug, contract, case.with_(num_workers=other, persistent_workers=True), chosen)
    for fresh_epoch, kept_epoch in zip(fresh, kept, strict=True):
        expect_holds(kept_epoch.observation, check_same_items(fresh_epoch, kept_epoch))


@pytest.mark.invariant("stream_agrees")
@round_trips
@given(data=st.data())
def test_stream_agrees_across_processes(group, world_size, stream_plug, contract, data):
    """Every rank's process builds rank 0's dataset for the same case: all read the same stream."""
    if stream_plug.needs_process_group:
        not_applicable(
            "the dataset takes its rank from the process group or the node it runs on, whatever rank it is "
            "told: a process cannot build another rank's dataset, which this check needs (the lock-step "
            "epochs still judge how the ranks' parts fit together)"
        )
    case = draw_stream_case(
        data, stream_plug, world_size=world_size, num_workers=0, max_dataset_size=MAX_GROUP_DATASET_SIZE
    )
    (epoch,) = read_epochs(group, stream_plug, contract, case, [data.draw(epochs(), label="epoch")], as_rank=0)
    expect_holds(epoch.observation, check_ranks_agree(epoch))


def _only_for_group_only(stream_plug) -> None:
    """The in-process tests judge what a dataset does without workers, cheaply; a dataset that
    takes its rank from the process group is read that way here instead."""
    if not stream_plug.needs_process_group:
        not_applicable("judged in-process (properties/test_streams.py); this test reads datasets judged only in groups")


@pytest.mark.invariant("stream_deterministic")
@round_trips
@given(data=st.data())
def test_stream_deterministic_in_groups(group, world_size, stream_plug, contract, data):
    """Two fresh datasets for the same case, read the same way, yield the same stream on every rank."""
    _only_for_group_only(stream_plug)
    case = draw_stream_case(data, stream_plug, world_size=world_size, max_dataset_size=MAX_GROUP_DATASET_SIZE)
    first, second = read_twice(group, stream_plug, contract, case, data.draw(epochs(), label="epoch"))
    expect_holds(second.observation, check_deterministic(first, second))


@pytest.mark.invariant("stream_reshuffles")
@round_trips
@given(data=st.data())
def test_stream_reshuffles_in_groups(group, world_size, stream_plug, contract, data):
    """shuffle=True, RESHUFFLE_EPOCHS consecutive epochs read without workers: not all in one order."""
    _only_for_group_only(stream_plug)
    requires_parameter(stream_plug, "shuffle")
    case = draw_stream_case(
        data,
        stream_plug,
        world_size=world_size,
        num_workers=0,
        shuffle=True,
        min_dataset_size=MIN_COMPARABLE_ITEMS,
        max_dataset_size=MAX_GROUP_DATASET_SIZE,
    )
    chosen = data.draw(consecutive_epochs(RESHUFFLE_EPOCHS), label="epochs")
    read = read_epochs(group, stream_plug, contract, case, chosen)
    expect_holds(read[-1].observation, check_reshuffles(read))


@pytest.mark.invariant("stream_reshuffles")
@with_workers
@given(data=st.data())
def test_stream_reshuffles_through_workers(group, world_size, stream_plug, contract, data):
    """shuffle=True, RESHUFFLE_EPOCHS consecutive epochs read by fresh workers: not all in one order."""
    case = _shuffled_through_workers(data, stream_plug, world_size, MIN_COMPARABLE_ITEMS)
    chosen = data.draw(consecutive_epochs(RESHUFFLE_EPOCHS), label="epochs")
    read = read_epochs(group, stream_plug, contract, case, chosen)
    violations = check_reshuffles(read)
    if violations:  # repeated through workers: read without them, to say why
        alone = read_epochs(group, stream_plug, contract, case.with_(num_workers=0), chosen)
        violations = check_reshuffles(read, without_workers=alone)
    expect_holds(read[-1].observation, violations)


@pytest.mark.invariant("epoch_reaches_workers")
@round_trips
@given(data=st.data())
def test_epoch_reaches_persistent_workers(group, world_size, stream_plug, contract, data):
    """Two epochs through persistent workers yield what fresh workers yield for the same epochs.
    Drawn apart, not one after the other: a worker's copy that counts its own epochs on from
    the first one (litdata's) agrees with fresh workers only while they come in a row."""
    case = _shuffled_through_workers(data, stream_plug, world_size)
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    fresh = read_epochs(group, stream_plug, contract, case, chosen)
    kept = read_epochs(group, stream_plug, contract, case.with_(persistent_workers=True), chosen)
    if not fresh[0].has_set_epoch:
        not_promised(
            "the dataset has no set_epoch(): no epoch to reach the workers (stream_reshuffles judges its passes)"
        )
    for fresh_epoch, kept_epoch in zip(fresh, kept, strict=True):
        expect_holds(
            kept_epoch.observation,
            check_same_stream(
                fresh_epoch,
                kept_epoch,
                "epoch_reaches_workers",
                f"after set_epoch({kept_epoch.case.epoch}), fresh workers and persistent workers read different streams",
            ),
        )


def _shuffled_through_workers(data, stream_plug, world_size, min_dataset_size=0):
    """A case with shuffle=True read by 1 to 3 workers per rank."""
    requires_parameter(stream_plug, "shuffle")
    case = draw_stream_case(
        data,
        stream_plug,
        world_size=world_size,
        num_workers=data.draw(st.integers(1, MAX_WORKERS), label="num_workers"),
        shuffle=True,
        min_dataset_size=min_dataset_size,
        max_dataset_size=MAX_GROUP_DATASET_SIZE,
    )
    return case
