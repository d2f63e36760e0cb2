"""A sampler that raises becomes one finding naming the rank and the exception: the
crash is charged to edge_sizes, and every other invariant is judged on the cases
where it did not crash."""

from __future__ import annotations

import pytest

from .corpus.faulty import SHARD_ERROR, RaisesOnRankOne
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
