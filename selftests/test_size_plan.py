"""The draws planned from the cost measured before them (harness/core/size_plan.py): a slow
sampler is drawn smaller N where a case of its passes would pass the budget, the draws keep
within the plan, and the verdict says which sizes it left out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_conformance.core import size_plan
from sampler_conformance.core.cost import Cost, Reading
from sampler_conformance.core.size_plan import CASE_BUDGET_S, SizePlan
from sampler_conformance.subjects.index_sampler.case import MAX_DATASET_SIZE, MAX_WORLD_SIZE
from sampler_conformance.subjects.index_sampler.draws import draw_case
from sampler_conformance.subjects.index_sampler.plug import load_plug

from .suite_run import certify

SLOW = "selftests.corpus.reference:SlowDistributedSampler"


def _plan(on_few: float, on_many: float) -> SizePlan:
    """Rank 0's whole pass of 10,000 items took ``on_few`` seconds on 8 ranks, ``on_many`` on 64."""
    return SizePlan((Reading(MAX_DATASET_SIZE, 8, pass_s=on_few), Reading(MAX_DATASET_SIZE, 64, pass_s=on_many)))


# Passes measured on this machine: torch's sampler, and sentence-transformers' GroupByLabelBatchSampler
# sharded by accelerate (each rank reads every rank's batches to keep its own).
TORCH = _plan(0.0012, 0.00105)
EVERY_RANKS_BATCHES = _plan(0.085, 0.085)


def test_a_fast_sampler_is_drawn_to_the_largest_size_everywhere():
    assert {TORCH.largest_size(w, True, MAX_DATASET_SIZE) for w in range(1, MAX_WORLD_SIZE + 1)} == {MAX_DATASET_SIZE}
    assert TORCH.lines(MAX_WORLD_SIZE, (1, 2, 4)) == []


def test_a_pass_of_the_share_costs_a_case_alike_on_every_world_size_read_in_turn():
    """0.05 s on 8 ranks, 1/W of it on W: in turn, any W reads 0.4 s a case at N=10,000, so half
    of N (0.2 s) is drawn; a real group reads its ranks at once: 4 ranks, 0.1 s, all of N."""
    share = _plan(0.05, 0.05 / 8)
    assert {share.largest_size(w, True, MAX_DATASET_SIZE) for w in range(1, MAX_WORLD_SIZE + 1)} == {5_000}
    assert share.largest_size(4, False, MAX_DATASET_SIZE) == MAX_DATASET_SIZE


def test_a_pass_of_every_ranks_batches_is_cut_more_on_more_ranks():
    """W x 0.085 s x N / 10,000 within 0.25 s: all of N on 1 and 2 ranks, half on 3, a fiftieth on 64."""
    plan = EVERY_RANKS_BATCHES
    assert [plan.largest_size(w, True, MAX_DATASET_SIZE) for w in (1, 2, 3, 64)] == [10_000, 10_000, 5_000, 200]
    assert plan.largest_size(64, True, 150) == 150  # never past what the test draws
    lines = plan.lines(MAX_WORLD_SIZE, (1, 2, 4))
    assert lines[0].startswith("draws planned from the cost: one rank's whole pass of N=1e4 took 85 ms on W=8"), lines
    assert lines[1:] == [
        "  simulated ranks: N up to 5,000 from W=3, 200 at W=64 (a case of N=1e4 on W=64: about 5.44 s)"
    ]


def test_a_pass_past_every_step_is_drawn_to_the_last_and_no_budget_plans_nothing():
    assert _plan(100.0, 100.0).largest_size(64, True, MAX_DATASET_SIZE) == MAX_DATASET_SIZE // 100
    measured = Cost([], [], list(EVERY_RANKS_BATCHES.passes))
    assert SizePlan.of(measured, 0) is None and SizePlan.of(None, CASE_BUDGET_S) is None
    assert (
        SizePlan.of(Cost([], [], [Reading(MAX_DATASET_SIZE, 8, stopped="the sampler raised")]), CASE_BUDGET_S) is None
    )
    assert SizePlan.of(measured, CASE_BUDGET_S) == EVERY_RANKS_BATCHES


def test_the_draws_keep_within_the_plan():
    plug = load_plug("torch.utils.data.distributed:DistributedSampler")
    plan = EVERY_RANKS_BATCHES
    cut: list[int] = []

    @given(data=st.data())
    @settings(max_examples=80, database=None, derandomize=True)
    def draw(data):
        case = draw_case(data, plug, drop_last=False)  # simulated: W drawn, its ranks read in turn
        assert case.dataset_size <= plan.largest_size(case.world_size, True, MAX_DATASET_SIZE), case
        in_group = draw_case(data, plug, drop_last=False, world_size=4)  # a real group's 4 ranks, at once
        assert in_group.dataset_size <= plan.largest_size(4, False, MAX_DATASET_SIZE), in_group
        if plan.largest_size(case.world_size, True, MAX_DATASET_SIZE) < MAX_DATASET_SIZE:
            cut.append(case.world_size)

    size_plan.use(plan)
    try:
        draw()
    finally:
        size_plan.use(None)
    assert cut, "no draw reached a world size the plan cuts: the test judged nothing"


def test_a_slow_sampler_is_certified_on_smaller_sizes_and_says_so(pytester):
    run = certify(pytester, SLOW, "--cost=measure", "-k", "test_per_epoch_invariant and covers")
    assert run.exit_code == 0, run.explain()
    recorded = run.written["cost"]
    plan = SizePlan.of(Cost.from_json(recorded), CASE_BUDGET_S)
    assert plan is not None, recorded
    largest = max(plan.largest_size(w, True, MAX_DATASET_SIZE) for w in range(1, MAX_WORLD_SIZE + 1))
    assert largest < MAX_DATASET_SIZE, recorded["passes"]  # 40 µs an index: at least half of N is left out
    assert 0 < run.written["sizes_judged"]["simulated"]["dataset_size"] <= largest, run.written["sizes_judged"]
    assert any(line.startswith("draws planned from the cost:") for line in recorded["summary"]), recorded["summary"]
    assert "simulated ranks: N up to" in run.output, run.explain()
