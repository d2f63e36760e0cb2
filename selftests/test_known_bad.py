"""Every known-bad sampler, run through the whole in-process suite (properties/), fails
exactly the invariants the catalogue says: the one its bug targets, plus those the bug
genuinely implies, each with its reason (selftests/catalogue.py). A few implied ones show
only on cases the random draws may miss; those may fail, and need not. An invariant
charged beyond that set is a wrong verdict of the suite."""

from __future__ import annotations

import pytest

from sampler_conformance.invariants import GROUP_ONLY, REGISTRY

from .catalogue import KNOWN_BAD
from .suite_run import certify


@pytest.mark.parametrize("spec", list(KNOWN_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_known_bad_sampler_fails_exactly_its_invariants(pytester, spec):
    rejection = KNOWN_BAD[spec]
    run = certify(pytester, spec)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert rejection.failed <= run.failed_invariants <= rejection.allowed, (
        f"charged beyond the catalogue: {sorted(run.failed_invariants - rejection.allowed)}; "
        f"not charged: {sorted(rejection.failed - run.failed_invariants)}\n{run.explain()}"
    )
    # The intended invariant's counterexample names it, with the case and the draws it failed on.
    counterexample = run.counterexamples(rejection.flag)[0]
    assert f"[{counterexample['title']}]" == rejection.title and counterexample["case"], counterexample
    assert rejection.test in run.failed_tests, run.explain()
    # What only real process groups check was not run, and the verdict says so.
    assert (
        "does NOT conform" in run.verdict
        and "not run: " + ", ".join(f for f in REGISTRY if f in GROUP_ONLY) in run.verdict
    ), run.verdict
