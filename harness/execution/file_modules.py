"""Modules loaded from a file (a spec ``path/to/file.py:ATTR``), under a name every process
of the run gives them alike, so that what one process pickles another can unpickle.

The rank processes load the file before they fork their DataLoader workers' fork server
(``rank_body``), so the workers have it too: they unpickle the dataset of a spec given as a
file. ``harness.subjects.specs`` loads it the same way, and words its errors."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


class NotAModule(Exception):
    """The path is not a file Python can load as a module."""


def is_file_module(module_part: str) -> bool:
    """Whether a spec's module part is a path (``x.py``, or with a separator), not a dotted name."""
    return module_part.endswith(".py") or "/" in module_part or "\\" in module_part


_FILE_MODULE_PREFIX = "_sampler_under_test_"


def file_module_name(path: Path) -> str:
    """The name a module loaded from ``path`` is registered under: the same in every process (a
    digest, not Python's salted ``hash()``)."""
    return f"{_FILE_MODULE_PREFIX}{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]}"


def is_loaded_from_file(module_name: str) -> bool:
    """Whether ``module_name`` is one :func:`load_file_module` registered: no import finds it."""
    return module_name.startswith(_FILE_MODULE_PREFIX)


def load_file_module(path: Path) -> ModuleType:
    """Execute the file as a module registered in ``sys.modules``; what the module raises is raised."""
    if not path.is_file():
        raise NotAModule(f"file {str(path)!r} does not exist")
    name = file_module_name(path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise NotAModule(f"{str(path)!r} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    # Its folder first on the path, as ``python path/to/file.py`` puts it: the file imports its neighbours.
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    # Registered so that pickling (rank processes, loader workers) and dataclasses can find it.
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def preload_file_modules(names: tuple[str, ...]) -> None:
    """Load those of ``names`` that are files, quietly: one that fails is reported when its spec is loaded."""
    for name in names:
        if is_file_module(name):
            try:
                load_file_module(Path(name))
            except Exception:
                pass
