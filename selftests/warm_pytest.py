"""The selftests' certification runs, forked from a warm interpreter instead of started fresh.

The selftests certify samplers about 150 times, each in a pytest process of its own, and
each fresh interpreter spends about 1.7 s importing torch, numpy, Hypothesis, pytest and the
suite before it collects a test. Here each run forks instead from a fork server that imported
them once (``sampler_conformance.execution.fork_server``: a fresh interpreter of its own,
started once per selftest process), and the child does what ``python -m pytest`` would do from
there: it enters pytester's directory with the test's environment and its own output files,
runs ``pytest.main`` with the same arguments, and exits as the console script does. Its exit
code, output and timeout mean what ``Pytester.runpytest_subprocess``'s do.

A run's ranks past the first come from fork servers shared the same way: each position's,
seeded as the selftests' seed seeds it, started once per selftest process
(``share_separate_fork_servers``), where a run would start one of its own a position (about
150 of them in the selftests, each a fresh interpreter importing torch).

Nothing of a run survives into the next: each is a new child of the server, which only ever
imported modules (``selftests.corpus`` among them, which each run imports with this module, and
the constants Hypothesis mines from them: ``selftests/mined_constants.py``), and so is each rank.
A run's own imports (the test modules, a sampler from elsewhere) happen in the child. The
tests that exercise the interpreter itself (installation, console scripts, signals, torchrun)
start their own interpreters, without pytester.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sampler_conformance.cli import exit_without_finalising
from sampler_conformance.execution.fork_server import (
    SHARED_SERVERS_VARIABLE,
    separate_fork_server_context,
    share_separate_fork_servers,
)
from sampler_conformance.execution.hash_seeds import HASH_SEED_VARIABLE, derived_hash_seed
from sampler_conformance.execution.processes import FORK_SERVER_PRELOAD

from .suite_run import HYPOTHESIS_SEED, REPO

# What every certification imports before its first test.
PRELOAD = (
    "torch",
    "numpy",
    "hypothesis",
    "pytest",
    "xdist.plugin",
    "sampler_conformance.plugin",
    "sampler_conformance.execution.rank_pool",
    "sampler_conformance.subjects.index_sampler.fixtures",
    "sampler_conformance.subjects.index_sampler.draws",
    # This module, which each run imports to find _pytest_main, and with it the corpus.
    "selftests.warm_pytest",
    "selftests.mined_constants",  # last: it mines the constants of the modules above
)
KILL_JOIN_TIMEOUT_S = 10
DEFAULT_TIMEOUT_S = 600.0  # a run given no timeout: the longest whole-suite certification is under a minute
SERVER_KEY = "selftests-pytest"
SHARED_POSITIONS = 4  # the largest group the selftests' certifications start: its positions past the first are shared
# Taken when the selftests load this module, before any test sets its own variables. The
# hash seed is the one a certification under the selftests' seed gives its first ranks, so
# that their runs fork those ranks from the warm pytest (execution/hash_seeds.py).
SERVER_ENVIRON = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    HASH_SEED_VARIABLE: str(derived_hash_seed(HYPOTHESIS_SEED, 0)),
}
# The pytest server's own: it imports this package's modules from wherever the test that
# starts it stands (Python 3.11's fork server ignores the sys.path it is given: its own comes
# from its environment, and a preload it cannot import is skipped without a word). A child's
# sys.path is the test's all the same (_pytest_main).
PYTEST_SERVER_ENVIRON = {
    **SERVER_ENVIRON,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), SERVER_ENVIRON.get("PYTHONPATH")])),
}


def runpytest_subprocess(
    pytester: pytest.Pytester, *args: str | os.PathLike[str], timeout: float | None = None
) -> pytest.RunResult:
    """``pytester.runpytest_subprocess(*args, timeout=timeout)``, forked from the warm server;
    without a timeout, bounded by DEFAULT_TIMEOUT_S all the same."""
    __tracebackhide__ = True
    context = separate_fork_server_context(SERVER_KEY, PRELOAD)
    if context is None:  # multiprocessing's private interface is not the known one: a fresh interpreter
        return pytest.Pytester.runpytest_subprocess(pytester, *args, timeout=timeout)
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    basetemp = tempfile.mkdtemp(prefix="runpytest-", dir=pytester.path)
    argv = [f"--basetemp={basetemp}", *map(str, args)]
    for plugin in pytester.plugins:
        argv = ["-p", str(plugin), *argv]
    # Not inside basetemp, which pytest empties when a run first asks for a tmp_path (xdist's workers do).
    outputs = Path(tempfile.mkdtemp(prefix="runpytest-output-", dir=pytester.path))
    stdout, stderr = outputs / "stdout", outputs / "stderr"
    environ = {**os.environ, SHARED_SERVERS_VARIABLE: _shared_rank_servers()}
    # As Pytester.popen sets it: the test's directory first on the child's PYTHONPATH.
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    process = context.Process(  # type: ignore[attr-defined]
        target=_pytest_main, args=(argv, str(pytester.path), environ, str(stdout), str(stderr))
    )
    with _server_environment(PYTEST_SERVER_ENVIRON):
        process.start()
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join(KILL_JOIN_TIMEOUT_S)
        raise pytester.TimeoutExpired(f"{timeout} second timeout expired running: pytest {' '.join(argv)}")
    return pytest.RunResult(
        process.exitcode,
        stdout.read_text(errors="replace").splitlines(),
        stderr.read_text(errors="replace").splitlines(),
        time.monotonic() - start,
    )


@functools.cache
def _shared_rank_servers() -> str:
    """The fork servers that a certification's ranks past the first come from, started once
    in this process and shared with every run (``fork_server.share_separate_fork_servers``):
    a run would otherwise start one a position, each a fresh interpreter importing torch."""
    with _server_environment(SERVER_ENVIRON):
        return share_separate_fork_servers(range(1, SHARED_POSITIONS), HYPOTHESIS_SEED, FORK_SERVER_PRELOAD)


@contextlib.contextmanager
def _server_environment(environ: dict[str, str]) -> Iterator[None]:
    """``environ`` while a warm server starts, whichever test starts it: the selftests' own
    environment, as it was before any test changed it (a test's marks, such as the tag by which
    test_rank_pool counts a run's processes, must not stick to a server that outlives it).
    The child gets the test's environment all the same."""
    current = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(current)


def _pytest_main(argv: list[str], cwd: str, environ: dict[str, str], stdout: str, stderr: str) -> None:
    """In the forked child: ``python -m pytest *argv`` from ``cwd`` with ``environ``, its
    output in the two files; then exit as the console script does. Never returns."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environ)
    # sys.path as a fresh `python -m pytest` here has it: the cwd, PYTHONPATH, then the installation's.
    installed = [p for p in sys.path if p.startswith((sys.prefix, sys.base_prefix))]
    sys.path[:] = [cwd, *filter(None, environ.get("PYTHONPATH", "").split(os.pathsep)), *installed]
    sys.argv = [str(Path(pytest.__file__).parent / "__main__.py"), *argv]
    for fd, path in ((1, stdout), (2, stderr)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), line_buffering=True)
    sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), line_buffering=True)
    code = int(pytest.ExitCode.INTERNAL_ERROR)  # if pytest.main itself raises
    try:
        code = int(pytest.main(argv))
    finally:
        exit_without_finalising(code)
