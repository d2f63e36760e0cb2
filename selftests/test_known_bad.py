"""Every known-bad sampler is rejected by the property meant for it, and says so."""

from __future__ import annotations

import pytest

from .catalogue import KNOWN_BAD
from .suite_run import certify


@pytest.mark.parametrize("spec", list(KNOWN_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_known_bad_sampler_is_rejected_by_its_property(pytester, spec):
    rejection = KNOWN_BAD[spec]
    # Only the property meant for it: the whole suite would shrink every other failure
    # too, five times the work, and nothing here reads those.
    run = certify(pytester, spec, "-k", rejection.test)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert rejection.test in run.failed_tests, (
        f"{rejection.test} did not reject {spec}; failed: {sorted(run.failed_tests)}\n{run.explain()}"
    )
    failure = run.failure_text(rejection.test)
    assert rejection.title in failure, f"{rejection.test}'s failure does not name {rejection.title}:\n{failure[-4000:]}"
    assert "does NOT conform" in run.verdict and rejection.flag in run.verdict, run.verdict
