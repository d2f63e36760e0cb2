"""Loading what a spec names, for every kind of subject: ``MODULE:ATTR`` or
``path/to/file.py:ATTR`` resolved to a callable, with one readable error (``SpecError``)
saying what was wrong and how to fix it."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.subject import SpecError
from sampler_conformance.execution.file_modules import NotAModule, is_file_module, load_file_module
from sampler_conformance.execution.scenario import RankContext, Ranks

# A factory carries this attribute, (module, PyPI distribution), when it adapts a sampler
# from a package that may not be installed (``adapters.needs``).
PACKAGE_ATTRIBUTE = "needs_package"
# A factory sets this attribute to True when what it builds acts as in a job only inside a
# process group (it reads its rank from the group, or rebalances across the group's ranks):
# only real process groups judge it, and its in-process tests are not applicable.
GROUP_ATTRIBUTE = "needs_process_group"
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def split_spec(spec: str, help: str) -> tuple[str, str]:
    """``MODULE:ATTR`` or ``path/to/file.py:ATTR``, split; a SpecError that says how to write it otherwise."""
    text = spec.strip()
    # A Windows drive letter is not a separator: split on the last colon.
    module_part, sep, attr_part = text.rpartition(":")
    if not sep or not module_part or not attr_part:
        raise SpecError(f"--sampler={spec!r} is not of the form MODULE:ATTR. {help}.")
    if not _DOTTED_NAME.match(attr_part):
        raise SpecError(
            f"--sampler={spec!r}: {attr_part!r} is not an attribute name (letters, digits, underscores, dots). {help}."
        )
    if not is_file_module(module_part) and not _DOTTED_NAME.match(module_part):
        raise SpecError(
            f"--sampler={spec!r}: {module_part!r} is neither a dotted module name nor a path to a .py file. {help}."
        )
    return module_part, attr_part


def import_module(spec: str, module_part: str, help: str) -> Any:
    """The module ``module_part`` names (a dotted name or a file); a SpecError that says how to fix it."""
    if is_file_module(module_part):
        return _import_file(spec, Path(module_part), help)
    try:
        return importlib.import_module(module_part)
    except ModuleNotFoundError as exc:
        if exc.name and module_part.startswith(exc.name):
            raise SpecError(
                f"--sampler={spec!r}: no module named {exc.name!r}. Install the package that "
                f"provides it in this environment (e.g. pip install -e path/to/your/project), "
                f"or add its folder to PYTHONPATH, or give a file path: "
                f"--sampler=path/to/file.py:ATTR."
            ) from None
        raise SpecError(_import_failure(spec, module_part, exc)) from None
    except Exception as exc:  # the module itself raised while importing
        raise SpecError(_import_failure(spec, module_part, exc)) from None


def _import_file(spec: str, path: Path, help: str) -> Any:
    try:
        return load_file_module(path)
    except NotAModule as exc:
        raise SpecError(f"--sampler={spec!r}: {exc}. {help}.") from None
    except Exception as exc:
        raise SpecError(_import_failure(spec, str(path), exc)) from None


def _import_failure(spec: str, where: str, exc: BaseException) -> str:
    frame = _last_frame(exc)
    location = f" (at {frame})" if frame else ""
    return (
        f"--sampler={spec!r}: importing {where!r} raised {type(exc).__name__}: {exc}{location}. "
        f"Fix the error in that module, then run again."
    )


def _last_frame(exc: BaseException) -> str | None:
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"


def resolve_attribute(spec: str, module: Any, attr_part: str, convention: str) -> Callable[..., Any]:
    """The callable ``attr_part`` names in ``module``; ``convention`` says what it must be, for the error."""
    target: Any = module
    for part in attr_part.split("."):
        if not hasattr(target, part):
            public = _callables_defined_in(target)
            hint = (
                f" Callables it has: {', '.join(public[:12])}{', ...' if len(public) > 12 else ''}." if public else ""
            )
            raise SpecError(
                f"--sampler={spec!r}: {getattr(target, '__name__', repr(target))!r} has no attribute {part!r}.{hint}"
            )
        target = getattr(target, part)
    if not callable(target):
        raise SpecError(
            f"--sampler={spec!r}: {attr_part!r} is a {type(target).__name__}, not a class or "
            f"function. Name {convention}."
        )
    require_package(spec, target)
    return target


def _callables_defined_in(target: Any) -> list[str]:
    """Public callables of ``target``; for a module, those it defines rather than imports."""
    names = [n for n in dir(target) if not n.startswith("_") and callable(getattr(target, n, None))]
    home = getattr(target, "__name__", None)
    own = [n for n in names if getattr(getattr(target, n), "__module__", None) == home]
    return sorted(own or names)


def keyword_parameters(factory: Callable[..., Any]) -> frozenset[str] | None:
    """The parameters ``factory`` takes by keyword; None when it takes any (``**kwargs``), or
    has no signature to read (a builtin), so that every optional one is passed."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(name for name, p in parameters.items() if p.kind in keyword_kinds)


def required_parameters(factory: Callable[..., Any]) -> frozenset[str]:
    """The parameters ``factory`` cannot be called without (none where it has no signature to read)."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(name for name, p in parameters.items() if p.default is p.empty and p.kind not in _VARIADIC)


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


# The parameter by which a sampler or factory takes the job's DeviceMesh (docs/meshes.md).
MESH_PARAMETER = "device_mesh"


def names_parameter(factory: Callable[..., Any], name: str) -> bool:
    """``factory`` names the keyword parameter ``name`` (one that takes ``**kwargs`` is not
    given it unasked: it may pass it on to a sampler that refuses it)."""
    try:
        parameter = inspect.signature(factory).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


# How a build given the mesh is said, in a fault's words ("in make(..., device_mesh=the job's DeviceMesh)").
MESH_GIVEN = f"{MESH_PARAMETER}=the job's DeviceMesh"


def mesh_said(mesh: dict[str, Any]) -> str:
    """``, device_mesh=the job's DeviceMesh`` where a factory is built with the mesh, for the call's words."""
    return f", {MESH_GIVEN}" if mesh else ""


# A factory may name the modules what it sends its loader workers needs, as a tuple in this
# attribute: every worker then starts with them imported, instead of importing them itself.
WORKER_MODULES_ATTRIBUTE = "worker_modules"


def factory_worker_modules(spec: str, module_part: str, module: Any, factory: Any) -> tuple[str, ...]:
    """What loader workers of ``factory``'s need imported: its module (a dotted name, or the path
    of its .py file) and the modules it names (:data:`WORKER_MODULES_ATTRIBUTE`)."""
    named = getattr(factory, WORKER_MODULES_ATTRIBUTE, ())
    if isinstance(named, str) or not all(isinstance(name, str) for name in named):
        raise SpecError(
            f"--sampler={spec!r}: {WORKER_MODULES_ATTRIBUTE} must be a tuple of module names, not {named!r}"
        )
    own = str(Path(module_part).resolve()) if is_file_module(module_part) else module.__name__
    return (own, *named)


def source_file(factory: Any, module: Any) -> str | None:
    for obj in (factory, module):
        try:
            return inspect.getsourcefile(obj) or inspect.getfile(obj)
        except TypeError:
            continue
    return None


@dataclass(frozen=True)
class FactoryConvention:
    """How a factory subject calls what the spec names: ``call`` (``make(weights, *, ...)``),
    with keywords ``required`` always and those of ``optional`` it takes; ``contracts`` and
    ``returns`` say it in the error, ``guide`` is the page that has the convention."""

    call: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    contracts: str  # "the weighted contracts"
    returns: str  # "the rank's sampler"
    guide: str  # "docs/weighted-samplers.md"

    @property
    def described(self) -> str:
        return f"a factory called as {self.call}"

    def accepted(self, spec: str, factory: Callable[..., Any]) -> frozenset[str]:
        """The optional parameters ``factory`` takes (all of them when it takes ``**kwargs``);
        a SpecError that says what to write when it lacks a required one."""
        keywords = keyword_parameters(factory)
        if keywords is None:
            return frozenset(self.optional)
        lacking = [p for p in self.required if p not in keywords]
        if lacking:
            raise SpecError(
                f"--sampler={spec!r}: the factory does not accept the keyword argument(s) {', '.join(lacking)}. "
                f"The {self.contracts} call {self.call} in each rank, passing those of {', '.join(self.optional)} it "
                f"names; write a function that takes them and returns {self.returns} ({self.guide})."
            )
        return frozenset(p for p in self.optional if p in keywords)


@dataclass(frozen=True, repr=False)
class FactoryPlug:
    """A factory under test and the optional parameters of its subject's convention it takes
    (``optional``): what the plugs of the factory subjects share."""

    spec: str
    factory: Callable[..., Any]
    source_file: str | None
    accepted: frozenset[str]
    optional: ClassVar[tuple[str, ...]] = ()
    called: ClassVar[str] = "factory"  # what the reasons call it: "the dataset factory"

    def __repr__(self) -> str:  # short: Hypothesis prints it in every falsifying example
        return f"{type(self).__name__}({self.spec!r})"

    def _repr_pretty_(self, printer, cycle) -> None:  # the IPython protocol Hypothesis's printer follows
        printer.text(repr(self))

    def supports(self, parameter: str) -> bool:
        return parameter in self.accepted

    @cached_property
    def takes_mesh(self) -> bool:
        """It names ``device_mesh``: on a mesh it is given the mesh (:meth:`placed`)."""
        return names_parameter(self.factory, MESH_PARAMETER)

    def taken(self, options: dict[str, Any]) -> dict[str, Any]:
        """Of ``options``, those the factory takes: the optional parameters it names, and the
        mesh, which :meth:`placed` gives only to a factory that names it."""
        return {name: value for name, value in options.items() if name in self.accepted or name == MESH_PARAMETER}

    def placed(self, rank: RankContext, who: int, world_size: int) -> tuple[int, int, dict[str, Any]]:
        """The rank and world size to build rank ``who``'s subject with, and the mesh where it
        takes one: on a device mesh, a factory that names ``device_mesh`` is given the job's
        mesh, with the global rank and world size that the process group gives, and finds its
        data coordinates itself (docs/meshes.md); elsewhere, or building another rank's,
        ``who`` of ``world_size``."""
        if rank.mesh is not None and who == rank.rank and self.takes_mesh:
            return rank.mesh.group_rank, rank.mesh.group_size, {MESH_PARAMETER: rank.mesh.device_mesh}
        return who, world_size, {}

    def missing_reason(self, parameter: str) -> str:
        return f"the {self.called} has no `{parameter}` parameter"

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(p for p in self.optional if p not in self.accepted)

    @property
    def is_factory(self) -> bool:
        return not inspect.isclass(self.factory)


def require_package(spec: str, factory: Any) -> None:
    """A SpecError naming what to install when ``factory`` needs a package that is not installed,
    or what to fix when it is installed and does not import: either is the environment's
    failure, which a sampler must not be charged with when its constructor imports it."""
    for module, distribution in getattr(factory, PACKAGE_ATTRIBUTE, ()):
        try:
            installed = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            installed = False
        if not installed:
            raise SpecError(
                f"--sampler={spec!r} adapts a sampler from the PyPI package {distribution!r}, which is not installed "
                f"here ({module!r} does not import). Install it next to torch: pip install {distribution}"
            )
        loaded = set(sys.modules)
        try:
            importlib.import_module(module)
        except Exception as exc:  # a package built for another torch raises RuntimeError or OSError here
            first_line = (str(exc).strip().splitlines() or [""])[0]
            raise SpecError(
                f"--sampler={spec!r} adapts a sampler from the PyPI package {distribution!r}, which is installed but "
                f"does not import here: importing {module!r} raised {type(exc).__name__}: {first_line}. Fix the "
                f"environment (a package built for another torch version, say), then run again."
            ) from None
        finally:
            if _forget_after_check:
                _forget_package(module.partition(".")[0], loaded)


# Whether require_package forgets what it imported: only in a process that collects the tests
# (the plugin says so, forget_checked_packages), which never builds a sampler. A process that
# builds them keeps the package, which its factory imports next: imported twice, a package's
# registrations (pytree nodes, operators) would run twice.
_forget_after_check = False


def forget_checked_packages() -> None:
    global _forget_after_check
    _forget_after_check = True


def _forget_package(package: str, loaded: set[str]) -> None:
    """Drop what the check imported of ``package``: Hypothesis reads every module loaded in the
    process that collects the tests, and a package of lazy modules (speechbrain's, whose k2
    integration raises ImportError when touched) breaks the collection of every test."""
    for name in [name for name in sys.modules if name not in loaded]:
        if name == package or name.startswith(f"{package}."):
            del sys.modules[name]
            _forgotten.add(package)


def forgot_a_package() -> bool:
    """Whether this process imported a package to check it and forgot it: a child forked from
    it would import the package a second time, which a package that registers itself with
    another one's registry refuses (datasets' Arrow types: ArrowKeyError)."""
    return bool(_forgotten)


_forgotten: set[str] = set()


def requires_building_another_ranks(ranks: Ranks, plug: FactoryPlug) -> None:
    """Not applicable where a process cannot build another rank's subject, which a check of
    agreement across processes needs: on a device mesh, a factory that takes the mesh finds its
    own data coordinates there (:meth:`FactoryPlug.placed`), and another rank's process has
    other ones."""
    if not ranks.group_is_data_parallel and plug.takes_mesh:
        not_applicable(
            f"on a device mesh the {plug.called} takes the mesh ({MESH_PARAMETER}=) and finds its own data "
            "coordinates there: a process cannot build another rank's, which this check needs (the lock-step "
            "epochs and replicas_read_alike still judge how the ranks' parts fit together)"
        )
