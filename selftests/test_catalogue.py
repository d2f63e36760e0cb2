"""The catalogue is complete and names real tests: every in-process property of the
default contract has a known-bad sampler, and every known-bad sampler is catalogued."""

from __future__ import annotations

import inspect

import pytest

from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT

from .catalogue import KNOWN_BAD, KNOWN_BAD_MODULE, sampler_of
from .corpus import known_bad
from .suite_run import PROPERTIES


@pytest.fixture
def promised_flags(pytester: pytest.Pytester) -> set[tuple[str, str]]:
    """(test function, the flag of its ``invariant`` marker) for each test pytest collects in properties/."""
    items, _ = pytester.inline_genitems(str(PROPERTIES), "-p", "no:cacheprovider")
    return {
        (item.originalname, marker.args[0])  # type: ignore[attr-defined]  # a Function
        for item in items
        if (marker := item.get_closest_marker("invariant"))
    }


def test_each_known_bad_sampler_names_the_test_that_checks_its_flag(promised_flags):
    wrong = {spec: r for spec, r in KNOWN_BAD.items() if (r.test, r.flag) not in promised_flags}
    assert not wrong, f"tests and flags in properties/: {sorted(promised_flags)}"


def test_every_property_of_the_default_contract_has_a_known_bad_sampler(promised_flags):
    default = CONTRACTS[DEFAULT_CONTRACT]
    in_process = {flag for _, flag in promised_flags if default.promises(flag)}
    assert in_process, "no property test was collected"
    proven = {r.flag for r in KNOWN_BAD.values()}
    assert in_process - proven == set()


def test_every_known_bad_sampler_is_catalogued_with_its_bug():
    defined = {
        f"{KNOWN_BAD_MODULE}:{name}"
        for name, obj in vars(known_bad).items()
        if inspect.isclass(obj) and obj.__module__ == known_bad.__name__
    }
    assert defined == set(KNOWN_BAD)
    undocumented = [spec for spec in KNOWN_BAD if "Rejected by:" not in (inspect.getdoc(sampler_of(spec)) or "")]
    assert not undocumented
