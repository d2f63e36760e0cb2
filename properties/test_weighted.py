"""The weighted sampler's invariants: every rank's sampler built for the drawn weights,
``set_epoch`` before each epoch, its draws read and judged together. Each test runs where its
invariant is declared to (``ranks``: simulated ranks, and real process groups, where every
rank builds its own sampler in its own process, whose global generators start alike, as in a
job; ``harness.subjects.weighted_sampler.scenarios``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_conformance.core.comparing import check_same_indices, fresh_epochs, reread_differs, two_epochs
from sampler_conformance.core.evidence import expect_holds
from sampler_conformance.core.frequencies import FalseAlarmBudget
from sampler_conformance.pytest_plugin import statistics
from sampler_conformance.pytest_plugin.crashes import judge_only_if
from sampler_conformance.subjects.weighted_sampler.case import MAX_EXACT_INCLUSION_ITEMS
from sampler_conformance.subjects.weighted_sampler.chance import distributed_sampler_partitions
from sampler_conformance.subjects.weighted_sampler.checks import (
    ONE_EPOCH,
    check_frequencies,
    check_inclusion,
    check_partition_frequencies,
    check_ranks_apart,
    check_streams_differ,
)
from sampler_conformance.subjects.weighted_sampler.draws import (
    FREQUENCY_DRAWS,
    MAX_SIMULATED_WORLD_SIZE,
    SEED_LIMIT,
    draw_comparable_case,
    draw_weighted_case,
    epochs,
)
from sampler_conformance.subjects.weighted_sampler.fixtures import requires_parameter
from sampler_conformance.subjects.weighted_sampler.scenarios import read_epochs

# The epochs whose samples without replacement the inclusion test counts: an item included
# with probability 0.55 where 0.7 is promised fails it with probability 0.9999 at dev's
# budget (docs/statistical-invariants.md); their ranks at most INCLUSION_WORLD_SIZE.
INCLUSION_EPOCHS = 1024
INCLUSION_WORLD_SIZE = 4


@pytest.mark.invariant("weighted_runs")
@given(data=st.data())
def test_weighted_runs(ranks, weighted_plug, contract, data):
    """One item or a hundred, no draws or many, more ranks than items: each epoch ends without raising."""
    case = draw_weighted_case(data, weighted_plug, contract)
    (epoch,) = read_epochs(ranks, weighted_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, [])


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH.flags])
@given(data=st.data())
def test_weighted_epoch(ranks, weighted_plug, contract, flag, data):
    """One epoch of every rank."""
    case = draw_weighted_case(data, weighted_plug, contract, world_size=ranks.world_size)
    (epoch,) = read_epochs(ranks, weighted_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, ONE_EPOCH[flag].judge(epoch))


@pytest.mark.invariant("ranks_draw_apart")
@given(data=st.data())
def test_ranks_draw_apart(ranks, weighted_plug, contract, data):
    """W >= 2: no two ranks' streams of one epoch are the same. In real groups every rank
    is in its own process, the global generators alike in all: a sampler that draws on the
    global generator draws the same stream on every rank of a job."""
    if ranks.world_size == 1:
        pytest.skip("one rank draws apart from no other")
    world_size = ranks.world_size or data.draw(st.integers(2, MAX_SIMULATED_WORLD_SIZE), label="W (world size)")
    case = draw_comparable_case(data, weighted_plug, contract, world_size=world_size)
    judge_only_if(case is not None)
    assert case is not None
    (epoch,) = read_epochs(ranks, weighted_plug, contract, case, [data.draw(epochs(), label="epoch")])
    expect_holds(epoch.observation, check_ranks_apart(epoch, contract))


@pytest.mark.invariant("weighted_deterministic")
@given(data=st.data())
def test_weighted_deterministic(ranks, weighted_plug, contract, data):
    """The stream of epoch e is a function of the seed and e: a sampler that read another epoch
    first, and a fresh one (a run resumed at e, or another run of the script), draw the same.
    Without set_epoch, the passes are compared by their count (``fresh_epochs``)."""
    requires_parameter(weighted_plug, "seed")
    case = draw_weighted_case(data, weighted_plug, contract)
    before, epoch = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    _, first = read_epochs(ranks, weighted_plug, contract, case, [before, epoch])
    *_, second = read_epochs(
        ranks, weighted_plug, contract, case, fresh_epochs(first.has_set_epoch, before, epoch), reading=1
    )
    what = reread_differs(first.has_set_epoch, before, epoch)
    expect_holds(
        second.observation,
        check_same_indices(first.observation, second.observation, "weighted_deterministic", what),
    )


@pytest.mark.invariant("weighted_reshuffles")
@given(data=st.data())
def test_weighted_reshuffles(ranks, weighted_plug, contract, data):
    """One sampler per rank, set_epoch before each of two epochs: the streams differ."""
    case = draw_comparable_case(data, weighted_plug, contract)
    judge_only_if(case is not None)
    assert case is not None
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    first, second = read_epochs(ranks, weighted_plug, contract, case, chosen)
    how = two_epochs(first.has_set_epoch, *chosen)
    expect_holds(second.observation, check_streams_differ(first, second, contract, "weighted_reshuffles", how))


@pytest.mark.invariant("weighted_seed_effective")
@given(data=st.data())
def test_weighted_seed_effective(ranks, weighted_plug, contract, data):
    """Two samplers built with different seeds, read at the same epoch: the streams differ."""
    requires_parameter(weighted_plug, "seed")
    case = draw_comparable_case(data, weighted_plug, contract)
    judge_only_if(case is not None)
    assert case is not None
    other = data.draw(st.integers(0, SEED_LIMIT - 1).filter(lambda s: s != case.seed), label="other seed")
    chosen = [data.draw(epochs(), label="epoch")]
    (first,) = read_epochs(ranks, weighted_plug, contract, case, chosen)
    (second,) = read_epochs(ranks, weighted_plug, contract, case.with_(seed=other), chosen)
    expect_holds(
        second.observation,
        check_streams_differ(first, second, contract, "weighted_seed_effective", f"seeds {case.seed} and {other}"),
    )


@pytest.mark.invariant("frequencies_match_weights")
@given(data=st.data())
def test_frequencies_match_weights(ranks, weighted_plug, contract, data):
    """All ranks' draws of one epoch together (FREQUENCY_DRAWS of them) follow the weights over
    the whole dataset. This test's examples share the certification's false-alarm budget
    (harness.core.frequencies): a conforming sampler fails it by chance with probability at
    most 1e-6."""
    world_size = ranks.world_size or data.draw(st.integers(1, MAX_SIMULATED_WORLD_SIZE), label="W (world size)")
    case = draw_weighted_case(
        data, weighted_plug, contract, world_size=world_size, num_samples=-(-FREQUENCY_DRAWS // world_size)
    )
    epoch = read_epochs(ranks, weighted_plug, contract, case, [data.draw(epochs(), label="epoch")])
    violations, verdict = check_frequencies(epoch, FalseAlarmBudget(tests=settings().max_examples).per_test)
    statistics.record(verdict)
    expect_holds(epoch[0].observation, violations)


@pytest.mark.invariant("frequencies_in_partition")
@given(data=st.data())
def test_frequencies_in_partition(ranks, weighted_plug, contract, data):
    """Each rank's draws of one epoch (FREQUENCY_DRAWS / W of them) follow the weights of its
    DistributedSampler partition at that epoch. A test per rank: the examples' tests share the
    certification's false-alarm budget of 1e-6."""
    world_size = ranks.world_size or data.draw(st.integers(1, MAX_SIMULATED_WORLD_SIZE), label="W (world size)")
    case = draw_weighted_case(
        data, weighted_plug, contract, world_size=world_size, num_samples=-(-FREQUENCY_DRAWS // world_size)
    )
    chosen = data.draw(epochs(), label="epoch")
    (epoch,) = read_epochs(ranks, weighted_plug, contract, case, [chosen])
    partitions = distributed_sampler_partitions(case.dataset_size, world_size, case.seed, chosen)
    budget = FalseAlarmBudget(tests=settings().max_examples * MAX_SIMULATED_WORLD_SIZE)
    violations, verdicts = check_partition_frequencies(epoch, partitions, budget.per_test)
    statistics.record(verdicts)
    expect_holds(epoch.observation, violations)


@pytest.mark.invariant("inclusion_follows_weights")
@given(data=st.data())
def test_inclusion_follows_weights(ranks, weighted_plug, contract, data):
    """Over INCLUSION_EPOCHS epochs, set_epoch before each, every item is among all ranks' draws
    as often as successive sampling by the weights includes it (computed exactly, so N is at
    most MAX_EXACT_INCLUSION_ITEMS). The examples share the certification's false-alarm budget
    of 1e-6."""
    world_size = ranks.world_size or data.draw(st.integers(1, INCLUSION_WORLD_SIZE), label="W (world size)")
    case = draw_weighted_case(
        data, weighted_plug, contract, world_size=world_size, max_dataset_size=MAX_EXACT_INCLUSION_ITEMS
    )
    first = data.draw(st.integers(0, 2**31 - 1 - INCLUSION_EPOCHS), label="first epoch")
    drawn = read_epochs(ranks, weighted_plug, contract, case, range(first, first + INCLUSION_EPOCHS))
    violations, verdict = check_inclusion(drawn, FalseAlarmBudget(tests=settings().max_examples).per_test)
    statistics.record(verdict)
    expect_holds(drawn[-1].observation, violations)
