"""A sampler that raises becomes one finding naming the rank and the exception: the
crash is charged to edge_sizes, and every other invariant is judged on the cases
where it did not crash."""

from __future__ import annotations

import re

import pytest

from sampler_conformance.plugin import SET_ASIDE_AS_DRAWN

from .corpus.faulty import COMPARE_ERROR, EMPTY_ERROR, SHARD_ERROR, RaisesOnRankOne
from .suite_run import certify

SPEC = "selftests.corpus.faulty:RaisesOnRankOne"
EXPECTED = f"rank {RaisesOnRankOne.FAILING_RANK}: the sampler raised FileNotFoundError while iterating: {SHARD_ERROR}"
# properties/test_lengths.py::test_equal_batch_counts iterates BatchSampler(sampler) itself,
# outside the runner's per-rank guard: its crash must be named and set aside all the same.
BATCH_COUNTS = "test_equal_batch_counts"


def test_exception_in_iter_is_one_finding_naming_the_rank(pytester):
    # Under quick: the selftests' five draws hold no one-rank case, so nothing would be judged.
    run = certify(pytester, SPEC, profile="quick")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert all(c["message"] == EXPECTED for c in run.counterexamples("edge_sizes")), run.counterexamples("edge_sizes")
    unnamed = sorted(test for test in run.failed_tests if EXPECTED not in run.failure_text(test))
    assert not unnamed, f"these failures do not name the rank and the exception: {unnamed}\n{run.explain()}"
    # Judged only on the one-rank cases, where rank 1 does not exist: too few of them (one
    # draw in sixteen) to reach the floor, so not judged with the count, never held.
    for flag in ("covers", "equal_length"):
        result = next(i for i in run.written["invariants"] if i["flag"] == flag)
        assert result["status"] == "not judged" and 0 < result["judged"] < run.written["run"]["judged_floor"], result


def test_exception_while_counting_batches_is_named_and_set_aside(pytester):
    run = certify(pytester, SPEC, "-k", BATCH_COUNTS)
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert run.counterexamples("edge_sizes")[0]["message"] == EXPECTED, run.counterexamples("edge_sizes")
    # Judged on the cases where it did not crash (the one-rank ones): held, or not judged where
    # the fixed draws hold fewer of those than the floor; never charged with the crash.
    equal_batches = next(i for i in run.written["invariants"] if i["flag"] == "equal_batches")
    assert equal_batches["status"] in ("held", "not judged") and equal_batches["judged"] > 0, equal_batches


RAISES_SOMETIMES = "selftests.corpus.evidence:RankZeroRaisesSometimes"


def test_a_raise_that_leaves_peers_waiting_is_a_raise_and_cuts_nothing_short(pytester):
    """Rank 0 raises on some sizes while rank 1 goes on into the suite's all-reduce: the fault
    is the raise, the waiting peer a consequence. No hang is reported or counted, so no later
    case or test is cut short, and every other invariant is judged on the other cases."""
    run = certify(pytester, RAISES_SOMETIMES, "--world-sizes=2", ranks="groups")
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    # Rank 1 raises too where it builds the sampler as the only rank (num_replicas=1, rank=0).
    raised = "the sampler raised RuntimeError while iterating: rank 0 cannot shard"
    assert all(raised in c["message"] for c in run.counterexamples("edge_sizes")), run.counterexamples("edge_sizes")
    for wording in ("SamplerHang", "hung", "did not answer", "earlier in this session", "earlier in this test"):
        assert wording not in run.output, f"{wording!r} in the output\n{run.explain()}"
    assert "a consequence of the fault above, not a fault of their own" in run.output, run.explain()
    group_only = {
        "agrees_across_ranks",
        "group_defaults",
        "loader_yields_sampler",
        "defaults",
        "reshuffles_on_set_epoch",
    }
    assert all(run.statuses[flag] == "held" for flag in group_only), run.statuses


def test_each_kind_of_failure_is_shown_with_its_count(pytester):
    """ValueError on N = 0, TypeError on every other N: the summary shows one counterexample
    of each kind, each with the cases it was seen on, and says where the rest are."""
    run = certify(pytester, "selftests.corpus.faulty:RaisesTwoWays", "-k", "edge_sizes or len_matches_iter")
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    shown = run.summary.split("edge_sizes", 1)[1]
    for error, message in (("TypeError", COMPARE_ERROR), ("ValueError", EMPTY_ERROR)):
        assert f"raised {error} while iterating: {message}" in shown, run.explain()
    seen = re.findall(r"seen on (\d+) of the (\d+) cases that failed it", shown)
    assert len(seen) == 2 and len({total for _, total in seen}) == 1, shown
    assert sum(int(cases) for cases, _ in seen) == int(seen[0][1]), shown
    kinds = {c["message"].split(" while iterating")[0] for c in run.counterexamples("edge_sizes")}
    assert kinds == {"rank 0: the sampler raised TypeError", "rank 0: the sampler raised ValueError"}, kinds


def test_a_counterexample_set_aside_elsewhere_is_still_shrunk_in_its_own_test(pytester):
    """Floats are set aside (as drawn, at N >= 10) by the reshuffle test, which runs first;
    valid_indices' own test still shrinks its failure, to N = 1 on one rank, and shows it
    first. Every counterexample not shrunk says so, and why."""
    run = certify(
        pytester,
        "selftests.corpus.known_bad:YieldsFloats",
        "-k",
        "test_set_epoch_reshuffles or (test_per_epoch_invariant and valid_indices)",
        profile="dev",
        ranks="simulated",
    )
    records = run.counterexamples("valid_indices")
    own = [r for r in records if r["test"].startswith("test_per_epoch_invariant")]
    # The first of its variants shrinks; a later one shows its first failure, saying why.
    assert own[0]["as_drawn"] is None and own[0]["case"].startswith("N=1, W=1,"), own
    assert all(r["as_drawn"] == "its invariant had failed already, shrunk, in an earlier test" for r in own[1:]), own
    assert all(r["as_drawn"] == SET_ASIDE_AS_DRAWN for r in records if r not in own), records
    shown = run.summary.split("valid_indices", 1)[1].splitlines()
    first_case = next(line for line in shown if line.strip().startswith("N="))  # under the message (and the script)
    assert first_case.strip().startswith("N=1, W=1,") and "as drawn" not in first_case, run.summary
