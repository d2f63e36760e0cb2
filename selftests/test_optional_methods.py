"""A sampler without ``__len__`` (torch's Sampler does not require one) is judged on
everything that does not need ``len()``: it fails ``len_matches_iter`` alone, with one
counterexample that says how to fix it, in-process and in real process groups. A
``__len__`` that exists and raises fails ``len_matches_iter`` alone."""

from __future__ import annotations

import pytest

from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT

from .suite_run import certify

CORPUS = "selftests.corpus.optional_methods"
PROMISED = CONTRACTS[DEFAULT_CONTRACT].flags
# The test of len_matches_iter: generated from the per-epoch table, on simulated ranks and in real groups.
LEN_TESTS = {"test_per_epoch_invariant"}


def test_sampler_without_len_fails_only_len_matches_iter_once(pytester):
    spec = f"{CORPUS}:WithoutLen"
    run = certify(pytester, spec, "--world-sizes=1,2", ranks="all")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    not_held = {flag: status for flag, status in run.statuses.items() if flag in PROMISED and status != "held"}
    assert not_held == {"len_matches_iter": "failed"}, f"{not_held}\n{run.explain()}"
    assert run.verdict.startswith(
        f"VERDICT: {spec} does NOT conform to contract 'torch' ({len(PROMISED)} invariants: {len(PROMISED) - 1} held, 1 failed)"
    )
    # Charged once: every len_matches_iter test of both runners finds the same fact, recorded
    # without a case, so the summary and the certificate carry one counterexample.
    counterexamples = run.counterexamples("len_matches_iter")
    assert len(counterexamples) == 1, counterexamples
    message = counterexamples[0]["message"]
    assert message.startswith("the sampler defines no __len__, so len(sampler) raises TypeError"), message
    assert "contract 'torch' requires it" in message, message
    assert "Define __len__ returning the number of indices one pass yields on this rank" in message, message
    assert counterexamples[0]["case"] is None, counterexamples[0]
    # Only the invariant's own tests failed, in both runners, and never as a crash.
    failed = run.failed_test_ids
    assert failed and all("len_matches_iter" in test for test in failed), failed
    assert run.failed_tests == LEN_TESTS, run.explain()
    assert "[sampler fault]" not in run.output, run.explain()


def test_len_that_raises_fails_len_matches_iter_alone(pytester):
    """The pass was read before len() was asked: what it yielded is judged by every other
    invariant, and the raise is the length invariant's alone, not a crash."""
    run = certify(pytester, f"{CORPUS}:LenFromBaseWithoutLen", "-k", "len_matches_iter or edge_sizes or covers")
    assert run.failed_invariants == {"len_matches_iter"}, run.explain()
    # Not a crash: edge_sizes is not charged (its edge cases stop on the len() violation first).
    assert run.statuses["covers"] == "held" and run.statuses["edge_sizes"] == "not judged", run.statuses
    expected = (
        "rank 0: the sampler raised AttributeError in __len__, before the pass: 'super' object has no attribute "
        "'__len__' (before the pass, which yielded "
    )
    messages = [c["message"] for c in run.counterexamples("len_matches_iter")]
    assert messages and all(m.startswith(expected) for m in messages), messages


def test_an_invariant_conditional_on_a_missing_optional_method_is_not_promised(pytester):
    """Under dynamic_batches len() is optional: to a sampler without __len__, batch_len_matches
    is "not promised", with the reason, and the verdict does not wait for it (it said
    PARTIAL, "not applicable", which a CI gate reading the state rejects). The whole suite: its
    real-group variants, not applicable to a sampler that needs no group, leave it not promised
    (the verdict table said "1 not run" for lhotse's samplers while they counted)."""
    spec = f"{CORPUS}:BudgetBatchesWithoutLen"
    run = certify(pytester, spec, "--contract=dynamic_batches", "-k", "batch_len_matches or batch_epoch", ranks="all")
    assert run.statuses["batch_len_matches"] == "not promised", run.explain()
    assert (
        "not promised: batch_len_matches: test_batch_len_matches[simulated]: the sampler has no __len__, which the "
        "dynamic_batches contract does not require" in run.output
    ), run.explain()
    # Deselected tests leave the run partial, but not on batch_len_matches' account.
    assert "batch_len_matches" not in run.verdict.partition("not a certification: ")[2], run.verdict
