"""Imports point downward (docs/architecture.md, "The direction of imports"):

    core  <-  execution  <-  subjects  <-  pytest_plugin, report  <-  the entry modules

A role folder of ``harness/`` (the package ``sampler_conformance``) imports from itself and
from the folders to its left, never from one to its right nor from a sibling of its own
layer; ``core/`` and ``execution/`` import neither Hypothesis nor pytest (rank processes run
``execution/``), and ``core/`` no torch.distributed. Outside ``subjects/`` no module names a kind
of subject: shared code reads the registry (``sampler_conformance.subjects``), never a kind's
folder. Within ``subjects/`` a kind imports from its own folder and from ``subjects/common/``,
never from another kind's. Every module is parsed with ``ast``, nothing is imported; an import
inside a function or under ``TYPE_CHECKING`` counts too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "sampler_conformance"
HARNESS = Path(__file__).resolve().parent.parent / "harness"
ENTRY = "the entry modules"  # the package's top-level modules (plugin, cli, api, torchrun, ...)
# The layer of each role folder, left to right; folders of one layer do not import each other.
LAYERS = {"core": 0, "execution": 1, "subjects": 2, "pytest_plugin": 3, "report": 3, ENTRY: 4}
# Subpackages mapped in from outside harness/ at build time (pyproject.toml): the certification's
# test folders import the plugin, so nothing in harness/ may import them; adapters are samplers.
MAPPED = {"properties": 5, "conformance": 5, "adapters": 5}
NO_TEST_FRAMEWORK = ("core", "execution")  # imported by rank processes: neither Hypothesis nor pytest
TEST_FRAMEWORKS = ("hypothesis", "pytest", "_pytest")
SHARED_BY_KINDS = "common"  # subjects/common/: what every kind may import and none owns
KINDS = frozenset(path.parent.name for path in (HARNESS / "subjects").glob("*/__init__.py")) - {SHARED_BY_KINDS}
# A kind's modules that only the test process imports; a rank process may import every other one.
TEST_SIDE = ("draws", "resume_draws", "fixtures", "simulated")


def module_name(path: Path) -> str:
    parts = path.relative_to(HARNESS).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def role_of(module: str) -> str:
    """The role folder of a module of the package (its top-level modules: ENTRY)."""
    parts = module.split(".")
    if len(parts) > 1 and (parts[1] in LAYERS or parts[1] in MAPPED):
        return parts[1]
    return ENTRY


def imports(module: str, source: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, absolute name) of everything ``source`` imports; ``from M import N`` yields M.N,
    which is a module or a name of M: either way it lies in M's role folder or below it."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            for alias in node.names:
                yield node.lineno, f"{origin}.{alias.name}"


def _kind_of(module: str) -> str | None:
    """The kind of subject whose folder holds ``module`` (None outside every kind's folder)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "subjects" and parts[2] in KINDS else None


def violations(module: str, source: str, is_package: bool = False) -> list[str]:
    """``module:line -> imported`` for each import of ``source`` against the direction."""
    role = role_of(module)
    found = []
    for line, imported in imports(module, source, is_package):
        top = imported.split(".")[0]
        if top == PACKAGE:
            target = role_of(imported)
            rank = MAPPED.get(target, LAYERS.get(target))
            wrong = target != role and (rank is None or rank >= LAYERS[role])
            parts = imported.split(".")
            wrong |= target == "subjects" != role and len(parts) > 2 and parts[2] in KINDS  # a kind's folder
            wrong |= _kind_of(module) not in (None, _kind_of(imported)) and _kind_of(imported) is not None
        elif top in TEST_FRAMEWORKS:
            wrong = role in NO_TEST_FRAMEWORK
        else:
            wrong = role == "core" and (imported + ".").startswith("torch.distributed.")
        if wrong:
            found.append(f"{module}:{line} -> {imported}")
    return found


def test_imports_point_downward() -> None:
    modules = sorted(HARNESS.rglob("*.py"))
    folders = {path.relative_to(HARNESS).parts[0] for path in modules if len(path.relative_to(HARNESS).parts) > 1}
    assert folders <= set(LAYERS), f"role folders without a layer in LAYERS: {sorted(folders - set(LAYERS))}"
    found = [
        wrong
        for path in modules
        for wrong in violations(module_name(path), path.read_text(), is_package=path.name == "__init__.py")
    ]
    assert not found, (
        "imports against the direction core <- execution <- subjects <- pytest_plugin, report <- entry:\n"
        + ("\n".join(found))
    )


def test_layers_below_the_subjects_name_none_of_their_modules() -> None:
    """core/ and execution/ do not reach a subject's module by name either (a string handed to
    import_module or to a fork server's preload): the subject's plug names what its rank
    processes' loader workers need (``Plug.worker_modules``)."""
    subjects = f"{PACKAGE}.subjects"
    found = [
        f"{module_name(path)}:{node.lineno}: {node.value!r}"
        for layer in ("core", "execution")
        for path in sorted((HARNESS / layer).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(subjects)
    ]
    assert not found, "modules of a subject named below the subjects' layer:\n" + "\n".join(found)


def test_checks_read_views_not_scenarios() -> None:
    """The pure checks of a subject judge the views of ``runs.py``; no scenario module (which
    rank processes import) is theirs to import."""
    found = [
        f"{module_name(path)}:{line} -> {imported}"
        for path in sorted((HARNESS / "subjects").rglob("*checks.py"))
        for line, imported in imports(module_name(path), path.read_text(), is_package=False)
        if ".scenarios" in imported
    ]
    assert not found, "checks importing scenarios:\n" + "\n".join(found)


def test_the_check_sees_wrong_imports() -> None:
    """The check itself: each kind of wrong import is caught, relative ones resolved."""
    core = f"{PACKAGE}.core.case"
    assert violations(core, f"from {PACKAGE}.report import results") == [f"{core}:1 -> {PACKAGE}.report.results"]
    assert violations(core, "from ..execution.scenario import Scenario") == [
        f"{core}:1 -> {PACKAGE}.execution.scenario.Scenario"
    ]
    assert violations(core, "def f():\n    import torch.distributed as dist") == [f"{core}:2 -> torch.distributed"]
    assert violations(core, "from torch import distributed") == [f"{core}:1 -> torch.distributed"]
    rank_body = f"{PACKAGE}.execution.rank_body"
    assert violations(rank_body, "from hypothesis import given") == [f"{rank_body}:1 -> hypothesis.given"]
    assert violations(rank_body, "from ..subjects.index_sampler import plug") == [
        f"{rank_body}:1 -> {PACKAGE}.subjects.index_sampler.plug"
    ]
    report = f"{PACKAGE}.report.certificate"
    assert violations(report, "from ..pytest_plugin.profiles import describe_draws")  # a sibling of its layer
    assert violations(f"{PACKAGE}.pytest_plugin.folders", f"from {PACKAGE} import conformance")
    # Shared code reads the registry of subjects, never one kind's folder.
    assert violations(report, "from ..subjects.index_sampler.plug import SamplerPlug")
    assert violations(f"{PACKAGE}.plugin", f"from {PACKAGE}.subjects import index_sampler")
    # A kind never imports another kind, relatively or not; what two kinds share lives in common/.
    weighted = f"{PACKAGE}.subjects.weighted_sampler.scenarios"
    assert violations(weighted, "from ..index_sampler.reading import BadIndex")
    assert violations(weighted, f"from {PACKAGE}.subjects.batch_sampler import case")
    assert not violations(weighted, f"from {PACKAGE}.subjects.common.reading import BadIndex\nfrom .case import X")
    # Downward, within a folder, and to the entry modules from the entry modules: all fine.
    assert not violations(report, "from ..subjects import subject_of\nfrom .results import FAILED")
    assert not violations(f"{PACKAGE}.subjects.index_sampler.scenarios", "from . import epochs", is_package=True)
    assert not violations(f"{PACKAGE}.torchrun", "from .plugin import state\nimport torch.distributed\nimport pytest")
    assert not violations(f"{PACKAGE}", "from . import api", is_package=True)


def test_rank_processes_import_neither_pytest_nor_hypothesis() -> None:
    """What a rank process may load (the registry of subjects, every module of every kind but
    its test-side ones, the rank body and the simulator) pulls in neither test framework:
    checked in a fresh interpreter, not by reading."""
    rank_side = sorted(module_name(path) for path in (HARNESS / "subjects").rglob("*.py") if path.stem not in TEST_SIDE)
    assert any(name.endswith(".scenarios") for name in rank_side)  # the flat scenarios.py of a kind too
    loaded = [f"{PACKAGE}.execution.rank_body", f"{PACKAGE}.execution.simulator", *rank_side]
    script = f"import importlib, sys\nfor name in {loaded!r}: importlib.import_module(name)\n" + (
        f"print(sorted(m for m in {TEST_FRAMEWORKS!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]", f"rank processes would import {result.stdout.strip()}"
