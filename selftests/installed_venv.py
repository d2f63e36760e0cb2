"""The wheel built from the tree, installed with its dependencies into a fresh virtual
environment that cannot see the clone: what test_installed_package runs the entry points in,
and test_docs_commands the docs' commands.

It is built once per selftest run (about 30 s) in the directory the xdist workers' base
temporary directories share, under a lock, whichever workers run its tests. A session scope
is not enough to share it: a worker whose queue runs dry tears its session fixtures down, and
pytest-xdist's groups (``--dist loadgroup``) do not group under pytest 9.2
(pytest-dev/pytest-xdist#1386).

When the selected tests need it, the build starts in the background as the run starts
(:func:`build_in_background`, from selftests/conftest.py), so no worker waits 30 s for it
while the other runs tests. A test that needs it takes the lock, which the builder holds
until it is done; if the builder failed, the test builds it again itself and shows why.

``python -m selftests.installed_venv SHARED`` is the background builder.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from .suite_run import REPO

INSTALL_TIMEOUT_S = 900  # torch's CPU wheel comes from local disk; the rest from the registry or pip's cache
RUN_TIMEOUT_S = 300


@dataclass(frozen=True)
class Venv:
    root: Path
    user_code: Path  # a copy of the corpus, as a user's own package
    empty: Path  # the working directory of every run

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def run(
        self, *command: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        environment = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CONFORMANCE_", "HYPOTHESIS_", "PYTEST_", "VIRTUAL_ENV")) and k != "CI"
        }
        environment.update(
            PYTHONPATH=str(self.user_code),
            PATH=f"{self.root / 'bin'}{os.pathsep}{environment['PATH']}",
            OMP_NUM_THREADS="1",
            COLUMNS="200",
            # The cost probe (2 to 3 s a certification) is test_scale's and test_size_plan's to
            # prove; from the wheel, the entry points and the docs' commands are.
            CONFORMANCE_COST="skip",
        )
        environment.update(env or {})
        return subprocess.run(
            command, cwd=cwd or self.empty, env=environment, capture_output=True, text=True, timeout=timeout
        )


def shared_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base temporary directory of the whole run, which every xdist worker's lies in."""
    shared = tmp_path_factory.getbasetemp()
    return shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared


def installed(shared: Path) -> Venv:
    """The venv, built here unless a builder has built it (waiting for one that is building)."""
    with _lock(shared):
        return _built_venv(shared / "installed")


@contextmanager
def build_in_background(shared: Path) -> Iterator[None]:
    """Starts the builder unless another worker did, and on leaving waits for the one it
    started (a bounded wait; then it is killed), so that no builder outlives the run."""
    try:
        os.close(os.open(shared / "installed.builder", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # another worker started it
        yield
        return
    with open(shared / "installed.builder.log", "w") as log:
        builder = subprocess.Popen(
            [sys.executable, "-m", "selftests.installed_venv", str(shared)], cwd=REPO, stdout=log, stderr=log
        )
    try:
        yield
    finally:
        try:
            builder.wait(INSTALL_TIMEOUT_S)
        finally:
            builder.kill()
            builder.wait()


@contextmanager
def _lock(shared: Path) -> Iterator[None]:
    with open(shared / "installed.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _built_venv(base: Path) -> Venv:
    built = Venv(base / "venv", base / "user_code", base / "empty")
    if (base / "built").exists():
        return built
    shutil.rmtree(base, ignore_errors=True)  # a build cut short
    base.mkdir()
    source = base / "source"  # a copy of the tree, so that the build leaves nothing in the clone
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".hypothesis", "build", "*.egg-info", "__pycache__", ".ruff_cache", ".pytest_cache"
        ),
    )
    wheels = base / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(wheels),
            str(source),
        ]
    )
    (wheel,) = wheels.glob("sampler_conformance-*.whl")
    _run([sys.executable, "-m", "venv", str(built.root)])
    # torch pinned first (its CPU build is on local disk); [test] pins Hypothesis as the clone's selftests do.
    _run(
        [
            built.python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "torch==2.13.0",
            f"{wheel}[test]",
        ]
    )
    shutil.copytree(REPO / "selftests" / "corpus", built.user_code / "corpus")
    built.empty.mkdir()
    (base / "built").touch()
    return built


def succeeded(result: subprocess.CompletedProcess[str]) -> None:
    """Asserts that a command exited 0, showing its output where it did not."""
    assert result.returncode == 0, f"{result.args} exited {result.returncode}\n{result.stdout}\n{result.stderr}"


def _run(command: list[str]) -> None:
    succeeded(subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S))


if __name__ == "__main__":
    installed(Path(sys.argv[1]))
