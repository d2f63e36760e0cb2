"""Type-check the package as it installs, and the repository's own Python around it.

mypy cannot follow setuptools' ``package-dir`` mapping (``harness/`` is the package
``sampler_conformance``, ``properties/`` its subpackage, ...), so this stages the package
as a tree of symbolic links, built from that mapping in ``pyproject.toml``, runs mypy with
the ``[tool.mypy]`` settings, and prints each error at its path in the repository.

    python tools/typecheck.py        # exit 0: no errors
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parent.parent
# Checked through the staged package: its modules import each other as sampler_conformance.*
EXTRA_FOLDERS = ("selftests", "tools", "benchmarks")


def package_dirs() -> dict[str, Path]:
    """Package name -> its folder in the repository, as the build maps them."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: REPO / folder for name, folder in setuptools["package-dir"].items()}


def stage(into: Path) -> dict[Path, Path]:
    """Link each mapped folder's files at their package path under ``into``; returns
    staged path -> repository path."""
    links: dict[Path, Path] = {}
    for name, folder in package_dirs().items():
        target = into.joinpath(*name.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in folder.rglob("*.py"):
            staged = target / source.relative_to(folder)
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.symlink_to(source)
            links[staged] = source
    return links


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="typecheck-") as scratch:
        root = Path(scratch)
        links = stage(root)
        command = [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "sampler_conformance",
            *(str(REPO / f) for f in EXTRA_FOLDERS),
        ]
        run = subprocess.run(
            command, cwd=root, capture_output=True, text=True, env={**os.environ, "MYPYPATH": str(root)}
        )
        output = run.stdout + run.stderr
        for staged, source in sorted(links.items(), key=lambda item: -len(str(item[0]))):
            output = output.replace(str(staged.relative_to(root)), str(source.relative_to(REPO)))
        print(output, end="")
        return run.returncode


if __name__ == "__main__":
    sys.exit(main())
