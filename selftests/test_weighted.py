"""The weighted sampler subject: its reference conforms, and each known-bad sampler of
selftests/corpus/weighted_bad.py fails exactly the invariants its bug breaks."""

from __future__ import annotations

import inspect

import pytest

from sampler_conformance.subjects import contract_named

from .catalogue import WEIGHTED_BAD, WEIGHTED_BAD_MODULE, WEIGHTED_CONTRACT
from .corpus import weighted_bad
from .suite_run import certify

CONTRACT_OPTION = f"--contract={WEIGHTED_CONTRACT}"


def test_the_reference_holds_every_invariant_of_the_contract(pytester):
    run = certify(pytester, "", CONTRACT_OPTION)
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(WEIGHTED_CONTRACT).flags, run.explain()
    assert run.verdict.startswith("VERDICT: sampler_conformance.adapters.torch_weighted:make conforms"), run.verdict


@pytest.mark.parametrize("spec", list(WEIGHTED_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_weighted_bug_fails_exactly_its_invariants(pytester, spec):
    run = certify(pytester, spec, CONTRACT_OPTION)
    run.assert_rejected(WEIGHTED_BAD[spec])


def test_every_known_bad_weighted_sampler_is_catalogued_with_its_bug():
    defined = {
        f"{WEIGHTED_BAD_MODULE}:{name}"
        for name, obj in vars(weighted_bad).items()
        if inspect.isclass(obj) and obj.__module__ == weighted_bad.__name__
    }
    assert defined == set(WEIGHTED_BAD)
    assert all("Rejected by:" in (inspect.getdoc(getattr(weighted_bad, s.rpartition(":")[2])) or "") for s in defined)
