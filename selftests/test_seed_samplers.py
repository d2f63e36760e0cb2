"""Verdicts on the samplers the project started from (seed 000 and seed 003)."""

from __future__ import annotations

import pytest

from .suite_run import certify

MASKRCNN = "selftests.corpus.reference:MaskRCNNDistributedSampler"
DATA_PARTITIONER = "selftests.corpus.reference:DataPartitionerSampler"


def record(record_property, run) -> None:
    """Keep what the suite said (junit XML, -s output) for docs/real-samplers.md's verdict table."""
    record_property("verdict", run.verdict)
    record_property("failed_tests", ", ".join(sorted(run.failed_tests)))
    print(run.verdict)


def test_maskrcnn_verdict(pytester, record_property):
    """One run (it is the slowest sampler to shrink), read three ways."""
    run = certify(pytester, MASKRCNN)
    record(record_property, run)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()

    # The crash: a single head copy of padding is too short exactly when 0 < N < W/2,
    # and the sampler's own `assert len(indices) == self.total_size` fires.
    crashes = [(n, w) for section, (n, w) in run.failing_cases("test_edge_sizes") if "raised AssertionError" in section]
    assert crashes, f"no edge case reported the AssertionError\n{run.explain()}"
    assert all(0 < 2 * n < w for n, w in crashes), crashes
    edge_text = run.failure_text("test_edge_sizes")
    assert "assert len(indices) == self.total_size" in edge_text, "the crash's source line is not shown"
    assert "[sampler fault] rank 0:" in edge_text

    # Contiguous blocks, and `self.shuffle = True` whatever the caller passed.
    assert {"strided", "unshuffled_in_order"} <= run.failed_invariants, run.explain()
    # The exact verdict: the crash is one finding (edge_sizes); on the cases where it does not
    # crash, its padding and blocks break the head-padded strided order; it accepts rank >= W;
    # seed and drop_last are not applicable. The reshuffle test stops on its head padding
    # before it can judge reshuffling.
    assert run.failed_invariants == {
        "pads_from_head",
        "strided",
        "unshuffled_in_order",
        "validates_arguments",
        "edge_sizes",
    }, run.explain()
    assert run.statuses["seed_effective"] == "not applicable", run.statuses
    assert run.statuses["reshuffles_on_set_epoch"] == "not judged", run.statuses

    # No seed, no drop_last: skipped with the reason, listed as not applicable, never failed.
    for parameter in ("seed", "drop_last"):
        reason = f"sampler has no `{parameter}` parameter"
        assert reason in run.skip_reasons, sorted(run.skip_reasons)
        assert reason in run.summary, run.summary
    not_applicable = [line for line in run.summary.splitlines() if line.lstrip().startswith("not applicable")]
    assert any("seed_effective" in line for line in not_applicable), not_applicable
    assert "test_seed_changes_order" not in run.failed_tests


def test_data_partitioner_is_rejected(pytester, record_property):
    # Under quick: the invalid-arguments test's five draws give it no rank=-1.
    run = certify(pytester, DATA_PARTITIONER, profile="quick")
    record(record_property, run)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    # What the tutorial's partitioner must break, from its design: the remainder is
    # dropped (coverage, floor(N/W) lengths), shares are contiguous, there is no
    # set_epoch, and rank=-1 silently picks the last partition.
    expected = {
        "test_per_epoch_invariant",  # coverage, equal lengths, strided assignment
        "test_set_epoch_reshuffles",
        "test_invalid_arguments_refused",
    }
    assert expected <= run.failed_tests, f"missing: {sorted(expected - run.failed_tests)}\n{run.explain()}"
    assert "sampler has no `shuffle` parameter" in run.skip_reasons, sorted(run.skip_reasons)
    assert "no set_epoch() method" in run.failure_text("test_set_epoch_reshuffles")
    # Each failure is charged to the invariant it breaks, wherever it was found: the dropped
    # remainder to covers and equal_length, not to edge_sizes or seed_effective, whose own
    # checks hold (no crash; seeds change the order).
    assert run.failed_invariants == {
        "equal_length",
        "covers",
        "strided",
        "reshuffles_on_set_epoch",
        "validates_arguments",
    }, run.explain()
    assert run.statuses["unshuffled_in_order"] == "not applicable", run.statuses
