"""The catalogue is complete and names real tests: every in-process property of the
default contract has a known-bad sampler, and every known-bad subject of the corpus
declares its rejection and sits in one table of expected verdicts."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT, contract_named

from . import corpus
from .catalogue import (
    KNOWN_BAD,
    TABLES,
    declared_rejections,
    known_bad_bug,
)
from .suite_run import PROPERTIES
from .test_rank_pool import MULTIPROCESS_ONLY_BUGS

# Every module of known-bad subjects: the corpus's modules named *_bad, so that a new one is checked unasked.
CORPUS_OF_KNOWN_BADS = tuple(
    importlib.import_module(f"{corpus.__name__}.{module.name}")
    for module in pkgutil.iter_modules(corpus.__path__)
    if module.name.endswith("_bad")
)


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


@pytest.mark.parametrize("module", CORPUS_OF_KNOWN_BADS, ids=lambda module: module.__name__.rpartition(".")[2])
def test_every_known_bad_declares_its_rejection_and_names_its_bug(module):
    """Every public class and function a module of known-bad subjects defines is one, with
    ``@rejected(...)`` above it under a contract that exists, in exactly one of the
    catalogue's tables, and a docstring whose first paragraph names its bug (docs/contracts.md
    shows it)."""
    defined = {
        f"{module.__name__}:{name}"
        for name, obj in vars(module).items()
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == module.__name__
        if not name.startswith("_")
    }
    declared = declared_rejections(module)
    # The bugs that pass in-process and fail in real groups, whose selftest asserts their verdict itself.
    proven_apart = set(MULTIPROCESS_ONLY_BUGS)
    assert defined - proven_apart == {spec for spec, _ in declared}, (
        "each public class or function declares its rejection"
    )
    tabled = [(spec, id(rejection)) for table in TABLES for spec, rejection in table.items()]
    assert sorted(tabled_here for tabled_here in tabled if tabled_here[0] in defined) == sorted(
        (spec, id(rejection)) for spec, rejection in declared
    ), "each rejection in exactly one table"
    assert all(contract_named(rejection.under) for _, rejection in declared)
    assert all(known_bad_bug(spec) for spec in defined)
