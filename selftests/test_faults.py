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
    run = certify(pytester, SPEC)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert all(c["message"] == EXPECTED for c in run.counterexamples("edge_sizes")), run.counterexamples("edge_sizes")
    unnamed = sorted(test for test in run.failed_tests if EXPECTED not in run.failure_text(test))
    assert not unnamed, f"these failures do not name the rank and the exception: {unnamed}\n{run.explain()}"
    # Judged on the one-rank cases, where rank 1 does not exist.
    assert run.statuses["covers"] == "held" and run.statuses["equal_length"] == "held", run.statuses


def test_exception_while_counting_batches_is_named_and_set_aside(pytester):
    run = certify(pytester, SPEC, "-k", BATCH_COUNTS)
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert run.counterexamples("edge_sizes")[0]["message"] == EXPECTED, run.counterexamples("edge_sizes")
    assert run.statuses["equal_batches"] == "held", run.statuses
