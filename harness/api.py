"""The API for a user's own test file or script, in the style of scikit-learn's estimator checks.

- :func:`parametrize_with_checks` turns one test function into one test per invariant the
  contract promises: ``@parametrize_with_checks(MySampler)`` over
  ``def test_sampler(check): check()``.
- :func:`check_sampler` certifies without pytest (a script, a notebook) and returns a
  :class:`Report`: the certificate's content, per invariant.

Both run the certification itself, the console script's pytest run, once per sampler,
contract and options, in a fresh interpreter: the same plugin and the same folders as
``pytest --pyargs sampler_conformance``, so the verdict is the same through every entry
point. A fresh interpreter also keeps the user's own pytest session (its plugins, options
and Hypothesis settings) out of the certification, and a sampler that kills its process
out of the user's run. The real process groups run as usual, and a sampler that needs one
(group-only) is certified in them.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .report.counterexamples import shown_counterexamples
from .report.results import ERROR, FAILED, HELD, NOT_PROMISED
from .subjects import DEFAULT_CONTRACT, REGISTRY, contract_named

# A certification ends by itself (every wait inside is bounded); this only guards against
# a machine so overloaded that it never does. Raise it for --hypothesis-profile=thorough.
RUN_TIMEOUT_S = 3600.0


class CertificationError(RuntimeError):
    """The certification could not reach a verdict on this invariant: a usage error (the
    sampler does not import), or the suite's own failure. Never the sampler's violation."""


class InvariantViolated(AssertionError):
    """The sampler broke a promised invariant; the message carries the counterexamples."""


@dataclass(frozen=True)
class InvariantReport:
    flag: str
    title: str
    status: str  # held, failed, not judged, not applicable, not run, error, not promised, turned off
    details: tuple[str, ...]
    counterexamples: tuple[dict[str, Any], ...]

    def explain(self) -> str:
        """The invariant's status, then its details or its smallest counterexamples."""
        lines = [f"{self.flag} ({self.title}): {self.status}"]
        lines += shown_counterexamples(self.counterexamples, "  ", "the certificate", whole=True)
        lines += [f"  {detail}" for detail in self.details if self.status != HELD]
        return "\n".join(lines)


@dataclass(frozen=True)
class Report:
    """One certification: what the certificate holds, plus the run's exit code and output."""

    spec: str
    exit_code: int  # the pytest run's, as the console script would exit
    certificate: dict[str, Any]
    output: str  # what the pytest run printed (stdout, then stderr)

    @property
    def conforms(self) -> bool:
        return bool(self.certificate["verdict"]["conforms"])

    @property
    def verdict(self) -> str:
        """The verdict line, e.g. ``VERDICT: ... conforms to contract 'torch' (18 invariants: 18 held, 0 failed)``."""
        return str(self.certificate["verdict"]["summary"])

    @property
    def invariants(self) -> dict[str, InvariantReport]:
        return {
            entry["flag"]: InvariantReport(
                entry["flag"],
                entry["title"],
                entry["status"],
                tuple(entry["details"]),
                tuple(entry["counterexamples"]),
            )
            for entry in self.certificate["invariants"]
        }

    @property
    def failed(self) -> list[str]:
        return [flag for flag, entry in self.invariants.items() if entry.status == FAILED]

    def __str__(self) -> str:
        return "\n".join([*(i.explain() for i in self.invariants.values() if i.status != NOT_PROMISED), self.verdict])


def check_sampler(
    factory: Callable[..., Any] | str, contract: str = DEFAULT_CONTRACT, args: Iterable[str] = ()
) -> Report:
    """Certify ``factory`` (a sampler class or factory, or its spec ``MODULE:ATTR``) under
    ``contract``; ``args`` are extra options of the pytest run, e.g.
    ``["--world-sizes=2", "--hypothesis-profile=dev"]``. Raises :class:`CertificationError`
    when no verdict could be reached (the sampler does not import, a bad option)."""
    contract_named(contract)  # a ValueError, saying what is known, before any run
    return _certify(sampler_spec(factory), contract, tuple(args))


def parametrize_with_checks(
    factory: Callable[..., Any] | str,
    contract: str = DEFAULT_CONTRACT,
    expected_failures: Mapping[str, str] | None = None,
    args: Iterable[str] = (),
) -> Any:
    """A ``pytest.mark.parametrize`` over the argument ``check``: one test per invariant that
    ``contract`` promises, with ids like ``MySampler-pads_from_head``.

    ``expected_failures`` maps an invariant to the reason it is broken on purpose; its
    test is a strict xfail with that reason, so it fails the day the invariant holds.
    ``args`` are extra options of the certification's pytest run. The certification runs
    once, at the first ``check()``, and every check reads its invariant from it."""
    import pytest

    promised = [flag for flag in REGISTRY if contract_named(contract).promises(flag)]
    spec = sampler_spec(factory)
    expected = dict(expected_failures or {})
    unknown = sorted(set(expected) - set(promised))
    if unknown:
        raise ValueError(
            f"expected_failures names {', '.join(unknown)}, which contract {contract!r} does not "
            f"promise; its invariants: {', '.join(promised)}"
        )
    name = spec.rpartition(":")[2]
    options = tuple(args)
    params = []
    for flag in promised:
        marks = (
            [pytest.mark.xfail(strict=True, raises=InvariantViolated, reason=expected[flag])]
            if flag in expected
            else []
        )
        params.append(pytest.param(Check(spec, contract, flag, options), marks=marks, id=f"{name}-{flag}"))
    return pytest.mark.parametrize("check", params)


@dataclass(frozen=True)
class Check:
    """One invariant's test: ``check()`` passes when it held, fails with its counterexamples
    when it was broken, and skips with the reason when it could not be judged here."""

    spec: str
    contract: str
    flag: str
    args: tuple[str, ...] = ()

    def __call__(self) -> None:
        import pytest

        __tracebackhide__ = True
        invariant = _certify(self.spec, self.contract, self.args).invariants[self.flag]
        if invariant.status == HELD:
            return
        if invariant.status == FAILED:
            raise InvariantViolated(f"{self.spec} breaks {invariant.explain()}")
        if invariant.status == ERROR:
            raise CertificationError(f"the suite failed, not the sampler: {invariant.explain()}")
        pytest.skip(invariant.explain().replace("\n", " "))

    def __repr__(self) -> str:
        return f"Check({self.spec}, {self.flag})"


def sampler_spec(factory: Callable[..., Any] | str) -> str:
    """The spec that imports ``factory`` in a fresh interpreter: ``module:qualname``, or
    ``path/to/file.py:qualname`` for a script's own ``__main__``."""
    if isinstance(factory, str):
        return factory
    qualname = getattr(factory, "__qualname__", None)
    module = getattr(factory, "__module__", None)
    if not qualname or not module or "<" in qualname:
        raise ValueError(
            f"{factory!r} cannot be imported by name in a fresh interpreter (a lambda or a function "
            f"defined inside another); define the sampler or its factory at the top level of a module"
        )
    if module == "__main__":
        source = inspect.getsourcefile(factory)
        if source is None or not Path(source).exists():
            raise ValueError(
                f"{qualname} is defined in an interactive session (a notebook or the REPL), which a "
                f"fresh interpreter cannot import; move it into a .py module, or pass its spec "
                f"'module:{qualname}'"
            )
        return f"{source}:{qualname}"
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not factory:
        raise ValueError(f"{module}:{qualname} does not name {factory!r}; pass the spec 'module:attribute' instead")
    return f"{module}:{qualname}"


@functools.cache
def _certify(spec: str, contract: str, args: tuple[str, ...]) -> Report:
    """The console script's run, in a fresh interpreter with this one's import path, cwd a
    temporary directory (the user's pytest configuration and conftest stay out of it)."""
    with tempfile.TemporaryDirectory(prefix="sampler-conformance-") as scratch:
        certificate = Path(scratch) / "certificate"
        command = [
            sys.executable,
            "-m",
            "sampler_conformance.cli",
            spec,
            f"--contract={contract}",
            f"--certificate={certificate}",
            "-p",
            "no:cacheprovider",
            *args,
        ]
        # sys.path's "" (a script's or `python -c`'s current directory) made absolute: the run's cwd differs.
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(os.path.abspath(p) for p in sys.path))
        try:
            run = subprocess.run(
                command, cwd=scratch, env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as exc:
            raise CertificationError(f"the certification of {spec} did not end within {RUN_TIMEOUT_S:.0f} s") from exc
        output = run.stdout + run.stderr
        written = certificate.with_suffix(".json")
        if not written.exists():
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise CertificationError(f"the certification of {spec} reached no verdict (exit {run.returncode}):\n{tail}")
        return Report(spec, run.returncode, json.loads(written.read_text()), output)
