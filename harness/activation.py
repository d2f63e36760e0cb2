"""The ``pytest11`` entry point: inert in anyone's test suite unless asked.

Installing the package must not change a user's own pytest runs: no options (which could
clash with theirs), no report header, nothing collected. So this module only registers the
real plugin (``sampler_conformance.plugin``) when the run asks for the certification by
collecting this package, e.g. ``pytest --pyargs sampler_conformance --sampler=...``.
``-p sampler_conformance.plugin`` asks for it explicitly (the console script does), and the
repository's root conftest loads it for a clone.
"""

from __future__ import annotations

import pytest

PACKAGE = "sampler_conformance"
PLUGIN = f"{PACKAGE}.plugin"


def asks_for_certification(pyargs: bool, targets: list[str]) -> bool:
    """Whether the run collects this package by its import name."""
    return pyargs and any(t == PACKAGE or t.startswith(f"{PACKAGE}.") for t in targets)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # The plugin's options are added when it registers (pytest_addoption is historic) and
    # parsed after this hook, so registering here is early enough for all of them.
    known = early_config.known_args_namespace
    if asks_for_certification(bool(getattr(known, "pyargs", False)), list(getattr(known, "file_or_dir", []) or [])):
        early_config.pluginmanager.import_plugin(PLUGIN)
