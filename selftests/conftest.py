"""Selftests run the certification suite in subprocesses through pytester."""

from __future__ import annotations

import os
import sys

import pytest

from .suite_run import REPO

pytest_plugins = ["pytester"]

# Settings of the outer run that must not leak into the suite under test.
_LEAKY_PREFIXES = ("CONFORMANCE_", "PYTEST_XDIST_", "HYPOTHESIS_")


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
    monkeypatch.setenv("COLUMNS", "200")


# pytest in a subprocess, as `python -m pytest` runs it, but ending as the console script
# does (sampler_conformance.cli.run): exit hooks, then no interpreter finalisation, which
# only garbage-collects torch (about 0.6 s of each of the selftests' hundred-odd runs).
_PYTEST_ENDING_AS_THE_CONSOLE_SCRIPT = (
    "import atexit, os, sys, pytest; code = int(pytest.main(sys.argv[1:])); atexit._run_exitfuncs(); "
    "sys.stdout.flush(); sys.stderr.flush(); os._exit(code)"
)


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester._getpytestargs = lambda: (sys.executable, "-c", _PYTEST_ENDING_AS_THE_CONSOLE_SCRIPT)  # type: ignore[method-assign]
    return pytester
