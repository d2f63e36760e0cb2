"""A sampler that raises becomes an ordinary failure naming the rank and the exception."""

from __future__ import annotations

import pytest

from .corpus.faulty import SHARD_ERROR, RaisesOnRankOne
from .suite_run import certify

SPEC = "selftests.corpus.faulty:RaisesOnRankOne"
EXPECTED = f"rank {RaisesOnRankOne.FAILING_RANK}: the sampler raised FileNotFoundError while iterating: {SHARD_ERROR}"
# properties/test_lengths.py::test_equal_batch_counts iterates BatchSampler(sampler)
# itself, outside the runner's per-rank guard, so the raw exception escapes unnamed.
BATCH_COUNTS = "test_equal_batch_counts"


def _unnamed(run, tests) -> list[str]:
    return sorted(test for test in tests if EXPECTED not in run.failure_text(test))


def test_exception_in_iter_names_the_rank(pytester):
    run = certify(pytester, SPEC)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert len(run.failed_tests) > 1, run.explain()
    unnamed = _unnamed(run, run.failed_tests - {BATCH_COUNTS})
    assert not unnamed, f"these failures do not name the rank and the exception: {unnamed}\n{run.explain()}"


def test_exception_in_iter_names_the_rank_when_counting_batches(pytester):
    run = certify(pytester, SPEC, "-k", BATCH_COUNTS)
    assert BATCH_COUNTS in run.failed_tests, run.explain()
    assert not _unnamed(run, {BATCH_COUNTS}), run.failure_text(BATCH_COUNTS)[-3000:]
