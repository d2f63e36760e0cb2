"""A sampler without ``__len__`` (torch's Sampler does not require one) is judged on
everything that does not need ``len()``: it fails ``len_matches_iter`` alone, with one
counterexample that says how to fix it, in-process and in real process groups. A
``__len__`` that exists and raises is a crash, as any other."""

from __future__ import annotations

import pytest

from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT

from .suite_run import CONFORMANCE, PROPERTIES, certify

CORPUS = "selftests.corpus.optional_methods"
PROMISED = CONTRACTS[DEFAULT_CONTRACT].flags
# The tests of len_matches_iter: generated from the per-epoch table, in-process and in real groups.
LEN_TESTS = {"test_per_epoch_invariant", "test_invariant_across_processes"}


def test_sampler_without_len_fails_only_len_matches_iter_once(pytester):
    spec = f"{CORPUS}:WithoutLen"
    run = certify(pytester, spec, "--world-sizes=1,2", paths=(PROPERTIES, CONFORMANCE))
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


def test_len_that_raises_is_a_crash(pytester):
    run = certify(pytester, f"{CORPUS}:LenFromBaseWithoutLen", "-k", "len_matches_iter or edge_sizes")
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    expected = "rank 0: the sampler raised AttributeError in __len__: 'super' object has no attribute '__len__'"
    assert all(c["message"] == expected for c in run.counterexamples("edge_sizes")), run.counterexamples("edge_sizes")
    # Every case crashed at len(), so len_matches_iter judged nothing; it was not charged.
    assert run.statuses["len_matches_iter"] == "not judged", run.statuses
