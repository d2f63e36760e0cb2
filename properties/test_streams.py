"""The streaming dataset's invariants, in-process: every simulated rank's dataset read the way a
DataLoader with workers reads it (``harness.subjects.iterable_dataset.loading``), one epoch or
two, on drawn layouts. ``conformance/test_streams.py`` reads them through real DataLoaders in
real process groups.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.subjects.iterable_dataset.checks import (
    MIN_COMPARABLE_ITEMS,
    ONE_EPOCH,
    RESHUFFLE_EPOCHS,
    check_deterministic,
    check_even_batches,
    check_no_starved_worker,
    check_reshuffles,
    check_same_items,
    check_seed_effective,
)
from sampler_conformance.subjects.iterable_dataset.draws import (
    EDGE_SIZE,
    SEED_LIMIT,
    consecutive_epochs,
    draw_stream_case,
    epochs,
    other_num_workers,
)
from sampler_conformance.subjects.iterable_dataset.fixtures import requires_parameter
from sampler_conformance.subjects.iterable_dataset.scenarios import read_epochs, read_twice


@pytest.mark.invariant("stream_runs")
@given(data=st.data())
def test_stream_runs(stream_plug, contract, data):
    """Small and empty datasets, one shard or many, more workers than items: each epoch ends
    without raising; also read without set_epoch, as an evaluation loop or a script that never
    calls it reads (the epoch None)."""
    case = draw_stream_case(data, stream_plug, max_dataset_size=EDGE_SIZE)
    epoch = data.draw(st.one_of(st.none(), epochs()), label="epoch")
    (epoch_read,) = read_epochs(SIMULATED, stream_plug, contract, case, [epoch])
    expect_holds(epoch_read.observation, [])


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH])
@given(data=st.data())
def test_stream_epoch(stream_plug, contract, flag, data):
    """One epoch, all (rank, worker) pairs together."""
    case = draw_stream_case(data, stream_plug)
    (epoch,) = read_epochs(SIMULATED, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, ONE_EPOCH[flag](epoch))


@pytest.mark.invariant("even_batches")
@given(data=st.data())
def test_even_batches(stream_plug, contract, data):
    """N a multiple of W x workers x batch_size (any N, if the contract pads or drops): every rank runs the same
    number of batches."""
    case = draw_stream_case(data, stream_plug, divisible=not contract.equalizes)
    (epoch,) = read_epochs(SIMULATED, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_even_batches(epoch))


@pytest.mark.invariant("no_starved_worker")
@given(data=st.data())
def test_no_starved_worker(stream_plug, contract, data):
    """At least one non-empty shard per (rank, worker) pair: every pair yields something."""
    case = draw_stream_case(data, stream_plug, fed=True)
    (epoch,) = read_epochs(SIMULATED, stream_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_no_starved_worker(epoch))


@pytest.mark.invariant("same_items_any_workers")
@given(data=st.data())
def test_same_items_any_workers(stream_plug, contract, data):
    """The same case read by another number of workers: the epoch's items, all ranks together, are the same."""
    case = draw_stream_case(data, stream_plug)
    chosen = [data.draw(epochs(), label="epoch")]
    (first,) = read_epochs(SIMULATED, stream_plug, contract, case, chosen)
    other = case.with_(num_workers=data.draw(other_num_workers(case.num_workers, 0), label="other num_workers"))
    (second,) = read_epochs(SIMULATED, stream_plug, contract, other, chosen)
    expect_holds(second.observation, check_same_items(first, second))


@pytest.mark.invariant("stream_deterministic")
@given(data=st.data())
def test_stream_deterministic(stream_plug, contract, data):
    """Two fresh datasets for the same case, read the same way, yield the same stream on every rank."""
    case = draw_stream_case(data, stream_plug)
    first, second = read_twice(SIMULATED, stream_plug, contract, case, data.draw(epochs(), label="epoch"))
    expect_holds(second.observation, check_deterministic(first, second))


@pytest.mark.invariant("stream_seed_effective")
@given(data=st.data())
def test_stream_seed_effective(stream_plug, contract, data):
    """shuffle=True, one epoch, datasets built with RESHUFFLE_EPOCHS consecutive seeds: not all in one order."""
    requires_parameter(stream_plug, "seed")
    requires_parameter(stream_plug, "shuffle")
    case = draw_stream_case(data, stream_plug, shuffle=True, min_dataset_size=MIN_COMPARABLE_ITEMS)
    epoch = data.draw(epochs(), label="epoch")
    seeds = [(case.seed + k) % SEED_LIMIT for k in range(RESHUFFLE_EPOCHS)]
    read = [read_epochs(SIMULATED, stream_plug, contract, case.with_(seed=seed), [epoch])[0] for seed in seeds]
    expect_holds(read[-1].observation, check_seed_effective(read))


@pytest.mark.invariant("stream_reshuffles")
@given(data=st.data())
def test_stream_reshuffles(stream_plug, contract, data):
    """shuffle=True, RESHUFFLE_EPOCHS consecutive epochs: not all in one order."""
    requires_parameter(stream_plug, "shuffle")
    case = draw_stream_case(data, stream_plug, shuffle=True, min_dataset_size=MIN_COMPARABLE_ITEMS)
    chosen = data.draw(consecutive_epochs(RESHUFFLE_EPOCHS), label="epochs")
    read = read_epochs(SIMULATED, stream_plug, contract, case, chosen)
    violations = check_reshuffles(read)
    if violations and case.num_workers:  # repeated through workers: read without them, to say why
        alone = read_epochs(SIMULATED, stream_plug, contract, case.with_(num_workers=0), chosen)
        violations = check_reshuffles(read, without_workers=alone)
    expect_holds(read[-1].observation, violations)
