"""Conforming samplers are certified: every property holds, none is skipped for them."""

from __future__ import annotations

import pytest

from .catalogue import GOOD
from .suite_run import REPO, certify

# The plug also loads a sampler from a file path (the module is not importable by name).
BY_FILE = f"{REPO / 'selftests' / 'corpus' / 'reference.py'}:NumpyDistributedSampler"


@pytest.mark.parametrize("spec", [*GOOD, BY_FILE], ids=lambda spec: spec.rpartition(":")[2] + (" by file" if spec == BY_FILE else ""))
def test_good_sampler_conforms(pytester, spec):
    run = certify(pytester, spec)
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert not run.failed_tests, run.explain()
    assert run.verdict.startswith(f"VERDICT: {spec} conforms"), run.verdict
    assert " 0 failed" in run.verdict, run.verdict
    # A good sampler takes every parameter: nothing may be skipped for lack of one.
    lacking = {reason for reason in run.skip_reasons if "sampler has no" in reason}
    assert not lacking, lacking
