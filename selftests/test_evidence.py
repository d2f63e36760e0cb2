"""A "held" rests on enough judged cases: an invariant's tests must judge at least the
profile's floor of cases together (``profiles.judged_floor``), the draws go on past the
cases where the sampler crashes, and an invariant short of the floor is "not judged" with
its count, never "held"."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler_conformance.core.case import Observation
from sampler_conformance.core.evidence import FAULT, SamplerFault, Violation, expect_holds, note_judged_with
from sampler_conformance.pytest_plugin import crashes
from sampler_conformance.subjects.batch_sampler.case import BatchCase
from sampler_conformance.subjects.data_loader.case import LoaderCase
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.weighted_sampler.case import WeightedCase

from .suite_run import certify

CRASHES_ON_SMALL = "selftests.corpus.evidence:CrashesOnSmallDatasets"


def test_a_sampler_crashing_on_small_sizes_is_judged_above_them(pytester):
    """Crashes below 200 items, where most draws fall, and above them has a bug only real
    groups see (shuffle off by default): the group test draws on until it sees it."""
    # The crashes set aside scale with the examples: quick's 10 leave too few to judge above them.
    # The per-epoch tests, in-process and in groups, and the group-only ones show it: each draws
    # on past the crashing sizes, and the group-only bug is seen (14 s; the whole suite took 25 s).
    options = ("--world-sizes=1,2", "-k", "per_epoch or process_groups")
    run = certify(pytester, CRASHES_ON_SMALL, *options, ranks="all", profile="dev")
    assert run.failed_invariants == {"edge_sizes", "defaults"}, run.explain()
    floor = run.written["run"]["judged_floor"]
    held = {i["flag"]: i["judged"] for i in run.written["invariants"] if i["status"] == "held"}
    assert held and all(judged >= floor for judged in held.values()), (floor, held)
    assert f"({held['agrees_across_ranks']} cases)" in run.summary, run.summary


def test_an_invariant_checked_in_both_places_is_held_only_where_both_judged_it(pytester):
    """A sampler that raises on every case in a process group: its per-epoch invariants,
    judged on simulated ranks only, are not judged (before: held on the simulated cases)."""
    run = certify(
        pytester, "selftests.corpus.evidence:RaisesInAGroup", "--world-sizes=2", "-k", "per_epoch", ranks="all"
    )
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    covers = next(i for i in run.written["invariants"] if i["flag"] == "covers")
    assert covers["status"] == "not judged" and covers["judged"] >= run.written["run"]["judged_floor"], covers
    assert "on simulated ranks only: in real process groups" in covers["details"][0], covers


@pytest.mark.parametrize(("one_in", "reaches_its_share"), [(8, True), (60, False)], ids=["1 in 8", "1 in 60"])
def test_a_test_short_of_its_share_draws_on_while_the_share_is_within_reach(one_in, reaches_its_share):
    """A sampler that crashes on all but one case in ``one_in``: at three times the examples
    set aside, a test that judged one in eight (14 of its 25 under dev) draws on until it has
    its share of the floor (before, it stopped there, short of it); one that judges one in
    sixty could not reach it within ten times, and stops, bounded, "not judged"."""
    note_judged_with(crashes.note_judged)
    examples = share = settings().max_examples  # the share of a test whose examples are fewer than the floor

    @settings(max_examples=examples, derandomize=True, database=None)
    @given(size=st.integers(0, 10_000))
    def judges(size):
        case = IndexCase(size, 1)
        if size % one_in:
            crashes.set_aside_or_raise(SamplerFault([Violation(FAULT, "raised ValueError")], case))
        expect_holds(Observation(case, (np.arange(size),), (size,)), [])

    crashes.begin_test("covers", "edge_sizes")
    crashes.draw_on_for(share)
    crashes.count_examples(judges)
    with contextlib.suppress(crashes.EnoughSetAside):
        judges()
    set_aside = len(crashes.take_set_aside())
    assert (crashes.judged() >= share) is reaches_its_share, (crashes.judged(), set_aside)
    assert set_aside <= crashes.DRAW_ON_ALLOWANCE * settings().max_examples


def test_an_invariant_judged_on_fewer_cases_than_the_floor_is_not_judged(pytester):
    """One world size of three selected: the group-only `defaults` test judges a third of
    its cases, too few to call it held."""
    run = certify(pytester, "torch.utils.data:DistributedSampler", "-k", "W1 and defaults", ranks="groups")
    defaults = next(i for i in run.written["invariants"] if i["flag"] == "defaults")
    floor = run.written["run"]["judged_floor"]
    assert defaults["status"] == "not judged" and 0 < defaults["judged"] < floor, defaults
    assert f"judged on {defaults['judged']} cases in all, fewer than the floor of {floor}" in defaults["details"][0]
    # Nothing else ran, and nothing reached the floor: no verdict, and no success exit.
    assert run.verdict.startswith("NO VERDICT") and "1 not judged" in run.verdict and run.exit_code == 5, run.verdict


@pytest.mark.parametrize(
    ("flag", "judged_from"),
    [("exactly_once", 1), ("stream_deterministic", 2), ("stream_runs", 0)],
    ids=["items", "an order", "a crash"],
)
def test_an_example_counts_as_judged_only_if_it_read_enough_items_to_fail(flag, judged_from):
    """The counting itself (``pytest_plugin.crashes``): every observation ``expect_holds``
    finds held reaches the plugin's hook, and an example whose observations read fewer items
    than its invariant's ``judged_from`` (an empty epoch; one item where an order is compared)
    is not judged: it is counted apart and rejected, so Hypothesis draws another. A crash can
    happen on an empty epoch, so for the crash flag every example counts."""
    note_judged_with(crashes.note_judged)  # as the plugin does at configure
    ran: list[int] = []

    @settings(max_examples=12, derandomize=True, database=None)
    @given(size=st.integers(0, 100))
    def judges(size):
        ran.append(size)
        expect_holds(Observation(IndexCase(size, 1), (np.arange(size),), (size,)), [])

    crashes.begin_test(flag, "stream_runs")
    crashes.count_examples(judges)
    judges()
    assert 0 in ran and crashes.examples() == len(ran)
    assert crashes.judged() == sum(size >= judged_from for size in ran) == 12  # the profile's examples
    assert crashes.too_few_items() == sum(size < judged_from for size in ran)


def test_a_case_is_built_again_from_the_parameters_its_record_holds():
    """What the reproduction scripts rebuild a counterexample from: a case's recorded
    parameters, its sequences as lists and a long one as runs of equal values, give it back."""
    weighted = WeightedCase(dataset_size=1_500, world_size=2, weights=(1.0,) * 1_000 + (0.0,) * 500, num_samples=3)
    assert isinstance(weighted.parameters()["weights"], dict)  # recorded as runs
    cases = [
        weighted,
        IndexCase(dataset_size=7, world_size=3, label_counts=(4, 3), epoch=2),
        BatchCase(dataset_size=3, world_size=2, lengths=(1, 2, 3), max_tokens=4),
        LoaderCase(dataset_size=9, world_size=2, global_batch_size=4, num_workers=1),
    ]
    for case in cases:
        assert type(case).from_parameters(case.parameters()) == case, case
