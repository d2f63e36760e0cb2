"""The plug: load the sampler under test from a ``MODULE:ATTR`` spec.

The spec names a class or a factory called the way DistributedSampler is:
``Attr(dataset, num_replicas=W, rank=r, shuffle=..., seed=..., drop_last=...)``.
``MODULE`` is a dotted module name, or a path to a ``.py`` file. The plug inspects the
signature once, so the suite knows which optional parameters the sampler accepts and
can skip (never silently pass) the properties that need a missing one.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sampler_conformance.core.subject import SpecError

DEFAULT_SPEC = "torch.utils.data.distributed:DistributedSampler"

# Parameters a sampler may lack; the properties that need them are skipped.
OPTIONAL_PARAMETERS = ("shuffle", "seed", "drop_last")
RANK_PARAMETERS = ("num_replicas", "rank")
# A factory sets this attribute to True when its sampler reads its rank from the process
# group; it is then built with neither num_replicas nor rank, in real groups only.
GROUP_ATTRIBUTE = "needs_process_group"

SPEC_HELP = (
    "Give it as MODULE:ATTR, e.g. --sampler=torch.utils.data.distributed:DistributedSampler "
    "or --sampler=path/to/my_sampler.py:MySampler"
)
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class SamplerSpecError(SpecError):
    """The spec is malformed, does not import, or does not name a callable."""


@dataclass(frozen=True, repr=False)
class SamplerPlug:
    """The sampler under test and what it accepts."""

    spec: str
    factory: Callable[..., Any]
    source_file: str | None
    accepted: frozenset[str]
    # True: the sampler takes num_replicas/rank from the process group (mmengine, detectron2),
    # so only real process groups (conformance/) can run it. See GROUP_ATTRIBUTE.
    needs_process_group: bool = False

    def __repr__(self) -> str:  # short: Hypothesis prints it in every falsifying example
        return f"SamplerPlug({self.spec!r})"

    def _repr_pretty_(self, printer, cycle) -> None:  # the IPython protocol Hypothesis's printer follows
        printer.text(repr(self))

    def supports(self, parameter: str) -> bool:
        return parameter in self.accepted

    @property
    def is_factory(self) -> bool:
        """The spec names a function that builds the sampler (an adapter), not its class: the
        defaults a certification sees are the factory's, which may not be the sampler's own."""
        return not inspect.isclass(self.factory)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(p for p in OPTIONAL_PARAMETERS if p not in self.accepted)

    @staticmethod
    def missing_reason(parameter: str) -> str:
        return f"sampler has no `{parameter}` parameter"

    def build(self, dataset: Any, num_replicas: int | None, rank: int | None, **options: Any) -> Any:
        """Construct one rank's sampler.

        ``None`` for ``num_replicas``/``rank`` is left out, so the sampler takes them from
        the process group as DistributedSampler does. Of the optional parameters, those the
        sampler does not accept are left out; callers only vary the ones it supports. Any
        other option (``batch_size`` for batch samplers) is passed as given.
        """
        kwargs = {k: v for k, v in options.items() if k in self.accepted or k not in OPTIONAL_PARAMETERS}
        if self.needs_process_group and (num_replicas is not None or rank is not None):
            raise TypeError(
                f"{self.spec} takes its rank from the process group; it cannot be built with explicit "
                f"num_replicas={num_replicas}, rank={rank}"
            )
        if num_replicas is not None:
            kwargs["num_replicas"] = num_replicas
        if rank is not None:
            kwargs["rank"] = rank
        return self.factory(dataset, **kwargs)


def load_plug(spec: str) -> SamplerPlug:
    """Resolve ``spec`` to a :class:`SamplerPlug`, or raise :class:`SamplerSpecError`."""
    module_part, attr_part = _split_spec(spec)
    module = _import_module(spec, module_part)
    factory = _resolve_attribute(spec, module, attr_part)
    needs_group = getattr(factory, GROUP_ATTRIBUTE, False) is True
    return SamplerPlug(
        spec=spec,
        factory=factory,
        source_file=_source_file(factory, module),
        accepted=_accepted_parameters(spec, factory, needs_group),
        needs_process_group=needs_group,
    )


def _split_spec(spec: str) -> tuple[str, str]:
    text = spec.strip()
    # A Windows drive letter is not a separator: split on the last colon.
    module_part, sep, attr_part = text.rpartition(":")
    if not sep or not module_part or not attr_part:
        raise SamplerSpecError(f"--sampler={spec!r} is not of the form MODULE:ATTR. {SPEC_HELP}.")
    if not _DOTTED_NAME.match(attr_part):
        raise SamplerSpecError(
            f"--sampler={spec!r}: {attr_part!r} is not an attribute name (letters, digits, "
            f"underscores, dots). {SPEC_HELP}."
        )
    if not _is_file_module(module_part) and not _DOTTED_NAME.match(module_part):
        raise SamplerSpecError(
            f"--sampler={spec!r}: {module_part!r} is neither a dotted module name nor a path "
            f"to a .py file. {SPEC_HELP}."
        )
    return module_part, attr_part


def _is_file_module(module_part: str) -> bool:
    return module_part.endswith(".py") or "/" in module_part or "\\" in module_part


def _import_module(spec: str, module_part: str) -> Any:
    if _is_file_module(module_part):
        return _import_file(spec, Path(module_part))
    try:
        return importlib.import_module(module_part)
    except ModuleNotFoundError as exc:
        if exc.name and module_part.startswith(exc.name):
            raise SamplerSpecError(
                f"--sampler={spec!r}: no module named {exc.name!r}. Install the package that "
                f"provides it in this environment (e.g. pip install -e path/to/your/project), "
                f"or add its folder to PYTHONPATH, or give a file path: "
                f"--sampler=path/to/file.py:ATTR."
            ) from None
        raise SamplerSpecError(_import_failure(spec, module_part, exc)) from None
    except Exception as exc:  # the module itself raised while importing
        raise SamplerSpecError(_import_failure(spec, module_part, exc)) from None


def _import_file(spec: str, path: Path) -> Any:
    if not path.is_file():
        raise SamplerSpecError(f"--sampler={spec!r}: file {str(path)!r} does not exist. {SPEC_HELP}.")
    name = f"_sampler_under_test_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise SamplerSpecError(f"--sampler={spec!r}: {str(path)!r} cannot be loaded as a Python module.")
    module = importlib.util.module_from_spec(module_spec)
    # Registered so that pickling (spawned rank processes) and dataclasses can find it.
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise SamplerSpecError(_import_failure(spec, str(path), exc)) from None
    return module


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


def _resolve_attribute(spec: str, module: Any, attr_part: str) -> Callable[..., Any]:
    target: Any = module
    for part in attr_part.split("."):
        if not hasattr(target, part):
            public = _callables_defined_in(target)
            hint = (
                f" Callables it has: {', '.join(public[:12])}{', ...' if len(public) > 12 else ''}." if public else ""
            )
            raise SamplerSpecError(
                f"--sampler={spec!r}: {getattr(target, '__name__', repr(target))!r} has no attribute {part!r}.{hint}"
            )
        target = getattr(target, part)
    if not callable(target):
        raise SamplerSpecError(
            f"--sampler={spec!r}: {attr_part!r} is a {type(target).__name__}, not a class or "
            f"function. Name a sampler class or a factory called as "
            f"Attr(dataset, num_replicas=W, rank=r, ...)."
        )
    return target


def _callables_defined_in(target: Any) -> list[str]:
    """Public callables of ``target``; for a module, those it defines rather than imports."""
    names = [n for n in dir(target) if not n.startswith("_") and callable(getattr(target, n, None))]
    home = getattr(target, "__name__", None)
    own = [n for n in names if getattr(getattr(target, n), "__module__", None) == home]
    return sorted(own or names)


def _source_file(factory: Any, module: Any) -> str | None:
    for obj in (factory, module):
        try:
            return inspect.getsourcefile(obj) or inspect.getfile(obj)
        except TypeError:
            continue
    return None


def _accepted_parameters(spec: str, factory: Callable[..., Any], needs_group: bool) -> frozenset[str]:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        # No signature to read (a builtin): assume it takes everything.
        return frozenset(OPTIONAL_PARAMETERS)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return frozenset(OPTIONAL_PARAMETERS)
    keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    keywords = {name for name, p in parameters.items() if p.kind in keyword_kinds}
    lacking = [p for p in RANK_PARAMETERS if p not in keywords]
    if lacking and not needs_group:
        raise SamplerSpecError(
            f"--sampler={spec!r}: the sampler does not accept the keyword argument(s) "
            f"{', '.join(lacking)}. The suite calls it as Attr(dataset, num_replicas=W, rank=r, ...) "
            f"like DistributedSampler; wrap it in a factory function that takes those arguments, or, if "
            f"it reads its rank from the process group, set `{GROUP_ATTRIBUTE} = True` on the factory "
            f"(docs/certify-your-sampler.md: samplers that take their rank from elsewhere)."
        )
    return frozenset(p for p in OPTIONAL_PARAMETERS if p in keywords)
