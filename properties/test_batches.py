"""The batch sampler's invariants: every rank's sampler built for the drawn lengths and budget
(or rate), ``set_epoch`` before each epoch, its batches read and judged together. Each test
runs where its invariant is declared to (``ranks``): on simulated ranks, and in real process
groups, where every rank builds its own sampler in its own process and the ranks read their
batches in lock step, as a training loop's gradient all-reduce makes them
(``harness.subjects.batch_sampler.scenarios``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_conformance.core.case import NoLen
from sampler_conformance.core.comparing import fresh_epochs, reread_differs, two_epochs
from sampler_conformance.core.evidence import expect_holds, not_promised
from sampler_conformance.core.frequencies import FalseAlarmBudget
from sampler_conformance.pytest_plugin import statistics
from sampler_conformance.pytest_plugin.crashes import judge_only_if
from sampler_conformance.pytest_plugin.ranks import groups_where_simulation_cannot
from sampler_conformance.subjects.batch_sampler.checks import (
    ONE_EPOCH,
    check_len,
    check_plans_differ,
    check_poisson_rate,
    check_processes_agree,
    check_same_plan,
    padding_wasted,
    poisson_steps,
    rate_epochs,
)
from sampler_conformance.subjects.batch_sampler.draws import (
    MIN_COMPARED_BATCHES_PER_RANK,
    MIN_COMPARED_ITEMS,
    comparable,
    draw_batch_case,
    epochs,
    most_items,
)
from sampler_conformance.subjects.batch_sampler.fixtures import requires_parameter
from sampler_conformance.subjects.batch_sampler.scenarios import read_epochs
from sampler_conformance.subjects.specs import requires_building_another_ranks

PADDING_WASTED = "padding wasted per batch"
# Epochs read per case where len() is compared with what each yields: a bucketing sampler's
# count changes with the epoch on a few cases in ten (pytorch/audio #3068).
LEN_EPOCHS = 4


def _one_epoch(data, ranks, batch_plug, contract, **fixed):
    case = draw_batch_case(data, batch_plug, contract, world_size=ranks.world_size, **fixed)
    (epoch,) = read_epochs(ranks, batch_plug, contract, case, [data.draw(epochs(), label="epoch")])
    return epoch


def _comparable(data, ranks, batch_plug, contract):
    """A case whose plans are long enough that two shuffled ones differ but by a negligible chance."""
    case = draw_batch_case(data, batch_plug, contract, world_size=ranks.world_size, min_dataset_size=MIN_COMPARED_ITEMS)
    if case.max_tokens:
        per_batch = sum(case.lengths) // (MIN_COMPARED_BATCHES_PER_RANK * case.world_size)
        case = case.with_(max_tokens=max(1, min(case.max_tokens, per_batch)))
    if case.batch_size:
        per_step = case.dataset_size // MIN_COMPARED_BATCHES_PER_RANK
        case = case.with_(batch_size=max(case.world_size, min(case.batch_size, per_step)))
    judge_only_if(comparable(case))
    return case


@pytest.mark.invariant("batches_run")
@groups_where_simulation_cannot
@given(data=st.data())
def test_batches_run(ranks, batch_plug, contract, data):
    """Empty datasets, one item, more ranks than batches, items over the budget: each epoch ends without raising."""
    epoch = _one_epoch(data, ranks, batch_plug, contract, max_dataset_size=12)
    expect_holds(epoch.observation, [])


@pytest.mark.parametrize("flag", [pytest.param(f, marks=pytest.mark.invariant(f), id=f) for f in ONE_EPOCH.flags])
@given(data=st.data())
def test_batch_epoch(ranks, batch_plug, contract, flag, data):
    """One epoch of every rank, judged together. With the budget, the padding its batches
    waste is measured too (reported in the certificate, not judged). In real groups the ranks
    step together: a rank that runs out is seen at the step it ran out, and its peers are never
    left waiting."""
    epoch = _one_epoch(data, ranks, batch_plug, contract, max_dataset_size=most_items(ranks))
    if flag == "within_budget":
        statistics.measure(PADDING_WASTED, padding_wasted(epoch))
    expect_holds(epoch.observation, ONE_EPOCH[flag].judge(epoch, batch_plug, contract))


@pytest.mark.invariant("batch_len_matches")
@groups_where_simulation_cannot
@given(data=st.data())
def test_batch_len_matches(ranks, batch_plug, contract, data):
    """len(), asked before and after each of LEN_EPOCHS epochs, counts the batches the rank
    yielded: a count that changes with the epoch while len() does not shows on one of them.
    Not promised to a sampler without __len__ unless the contract requires one."""
    case = draw_batch_case(data, batch_plug, contract, world_size=ranks.world_size)
    chosen = data.draw(st.lists(epochs(), min_size=LEN_EPOCHS, max_size=LEN_EPOCHS, unique=True), label="epochs")
    for epoch in read_epochs(ranks, batch_plug, contract, case, chosen):
        if NoLen.UNDEFINED in epoch.observation.reported_lengths and not contract.requires_len:
            not_promised(f"the sampler has no __len__, which the {contract.name} contract does not require")
        expect_holds(epoch.observation, check_len(epoch, contract))


@pytest.mark.invariant("batches_deterministic")
@groups_where_simulation_cannot
@given(data=st.data())
def test_batches_deterministic(ranks, batch_plug, contract, data):
    """The batches of epoch e are a function of the seed and e: a sampler that read another
    epoch first, and a fresh one (a run resumed at e, or the script run again), plan the same.
    Without set_epoch, the passes are compared by their count (``fresh_epochs``)."""
    requires_parameter(batch_plug, "seed")
    case = draw_batch_case(data, batch_plug, contract, world_size=ranks.world_size)
    before, epoch = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    _, first = read_epochs(ranks, batch_plug, contract, case, [before, epoch])
    *_, second = read_epochs(
        ranks, batch_plug, contract, case, fresh_epochs(first.has_set_epoch, before, epoch), reading=1
    )
    what = reread_differs(first.has_set_epoch, before, epoch)
    expect_holds(second.observation, check_same_plan(first, second, "batches_deterministic", what))


@pytest.mark.invariant("batches_reshuffle")
@groups_where_simulation_cannot
@given(data=st.data())
def test_batches_reshuffle(ranks, batch_plug, contract, data):
    """One sampler per rank, set_epoch before each of two epochs: the plans differ."""
    case = _comparable(data, ranks, batch_plug, contract)
    chosen = data.draw(st.lists(epochs(), min_size=2, max_size=2, unique=True), label="epochs")
    first, second = read_epochs(ranks, batch_plug, contract, case, chosen)
    how = two_epochs(first.has_set_epoch, *chosen)
    expect_holds(second.observation, check_plans_differ(first, second, "batches_reshuffle", how))


@pytest.mark.invariant("poisson_rate")
@given(data=st.data())
def test_poisson_rate(ranks, batch_plug, contract, data):
    """Every item's draws over enough epochs that it had RATE_STEPS steps to be drawn at (or
    MAX_RATE_EPOCHS) against Binomial(steps, sample_rate). The examples' tests share
    the certification's false-alarm budget of 1e-6 (harness.core.frequencies)."""
    case = draw_batch_case(
        data, batch_plug, contract, world_size=ranks.world_size, min_dataset_size=1, max_dataset_size=100
    )
    first = data.draw(st.integers(0, 2**20), label="first epoch")
    (probe,) = read_epochs(ranks, batch_plug, contract, case, [first])
    steps = poisson_steps(probe)
    judge_only_if(steps is not None and steps > 0)  # unequal or no steps: equal_batch_counts' and batch_len_matches'
    assert steps is not None
    read = read_epochs(
        ranks,
        batch_plug,
        contract,
        case,
        [first + k for k in range(rate_epochs(steps))],
    )
    judge_only_if(all(poisson_steps(epoch) == steps for epoch in read))
    violations, verdict = check_poisson_rate(
        read, steps * len(read), FalseAlarmBudget(tests=settings().max_examples).per_test
    )
    statistics.record(verdict)
    expect_holds(read[0].observation, violations)


@pytest.mark.invariant("batch_plan_agrees")
@given(data=st.data())
def test_batch_plan_agrees_across_processes(ranks, batch_plug, contract, data):
    """Every rank's process builds the same rank's sampler for the same case: all plan the same batches."""
    requires_building_another_ranks(ranks, batch_plug)
    case = draw_batch_case(data, batch_plug, contract, world_size=ranks.world_size, max_dataset_size=most_items(ranks))
    as_rank = data.draw(st.integers(0, case.world_size - 1), label="rank built in every process")
    (epoch,) = read_epochs(ranks, batch_plug, contract, case, [data.draw(epochs(), label="epoch")], as_rank=as_rank)
    expect_holds(epoch.observation, check_processes_agree(epoch, as_rank))
