"""Selftests run the certification suite in subprocesses through pytester."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator

import pytest

from . import installed_venv, warm_pytest
from .suite_run import REPO

pytest_plugins = ["pytester"]

# Settings of the outer run that must not leak into the suite under test.
_LEAKY_PREFIXES = ("CONFORMANCE_", "PYTEST_XDIST_", "HYPOTHESIS_")


@pytest.fixture(scope="session", autouse=True)
def installed_venv_built_meanwhile(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """When a selected test needs the installed package's venv, its build starts now, in the
    background, rather than when that test comes up (selftests.installed_venv)."""
    if not any("venv" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield
        return
    with installed_venv.build_in_background(installed_venv.shared_directory(tmp_path_factory)):
        yield


@pytest.fixture(scope="session")
def venv(tmp_path_factory: pytest.TempPathFactory) -> installed_venv.Venv:
    """The installed package's venv (selftests.installed_venv), built once for the whole run."""
    return installed_venv.installed(installed_venv.shared_directory(tmp_path_factory))


@pytest.fixture(autouse=True)
def suite_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The subprocess runs in pytester's tmp dir: make the repo importable from there
    (specs name ``selftests.corpus``) and keep one
    thread per run so parallel selftests do not oversubscribe the cores."""
    for name in list(os.environ):
        if name.startswith(_LEAKY_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # The cost probe (about 2 s a run) measures where a run asks for it: suite_run gives
    # --cost=measure to the runs of +scalable, the contract whose invariant judges it.
    monkeypatch.setenv("CONFORMANCE_COST", "skip")
    # Each failing certification writes its reproduction scripts and runs each twice: the runs
    # that check them (test_known_bad) give --repro=on.
    monkeypatch.setenv("CONFORMANCE_REPRO", "off")
    monkeypatch.setenv("COLUMNS", "200")


# pytest in a subprocess, as `python -m pytest` runs it, but ending as the console script
# does (sampler_conformance.cli.exit_without_finalising): 0.6 s less in each of the
# selftests' hundred-odd runs.
_PYTEST_ENDING_AS_THE_CONSOLE_SCRIPT = (
    "import sys, pytest; from sampler_conformance.cli import exit_without_finalising; "
    "exit_without_finalising(int(pytest.main(sys.argv[1:])))"
)


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester whose subprocess runs fork from a warm interpreter (selftests.warm_pytest); where
    that cannot be had, a fresh interpreter ending as the console script does."""
    pytester.runpytest_subprocess = functools.partial(warm_pytest.runpytest_subprocess, pytester)  # type: ignore[method-assign]
    pytester._getpytestargs = lambda: (sys.executable, "-c", _PYTEST_ENDING_AS_THE_CONSOLE_SCRIPT)  # type: ignore[method-assign]
    return pytester
