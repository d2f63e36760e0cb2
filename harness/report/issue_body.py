"""A ready-to-paste issue body beside each offered reproduction script (docs/reproductions.md):
the versions, the promise broken in one sentence, the script and what it printed, in Markdown
for the sampler's issue tracker."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path

from sampler_conformance.core.contracts import Contract

PROMISE_LINE = "# The promise: "  # how a script states the promise it asserts (one comment)


def issue_body(
    spec: str, contract: Contract, title: str, script: Path, output: str, adapted: Sequence[str] = ()
) -> str:
    """The body of an issue reporting that ``spec`` breaks the promise ``script`` asserts;
    ``adapted``: the distributions whose code the spec builds (an adapter's ``needs``)."""
    text = script.read_text()
    promise = next(
        (line.removeprefix(PROMISE_LINE) for line in text.splitlines() if line.startswith(PROMISE_LINE)), title
    )
    return (
        f"### `{spec}` breaks a promise of its contract: {title}\n\n"
        f"**The promise:** {promise}\n\n"
        f"**Versions:** {versions(spec, adapted)}\n\n"
        f"**To reproduce** (plain Python: it needs only the sampler's package and torch): save the script as "
        f"`{script.name}` and run `python {script.name}`; it exits 1 while the bug is there, 0 once it is fixed.\n\n"
        f"```python\n{text.rstrip()}\n```\n\n"
        f"**Output:**\n\n```\n{output.rstrip()}\n```\n\n"
        f"Found by a conformance check of distributed samplers (contract `{contract.name}`: {contract.description}).\n"
    )


def versions(spec: str, adapted: Sequence[str] = ()) -> str:
    """The sampler's distribution and version (where it comes from one), those of the packages it
    adapts, torch's, Python's and the platform."""
    top = spec.partition(":")[0].split(".")[0]
    distributions = dict.fromkeys([*_distributions_by_package().get(top, []), *adapted])
    found = [f"{distribution} {_version(distribution)}" for distribution in distributions]
    if "torch" not in {name.split()[0] for name in found}:
        found.append(f"torch {_version('torch')}")
    found += [f"Python {platform.python_version()}", platform.platform(terse=True)]
    return ", ".join(found)


@functools.cache
def _distributions_by_package() -> Mapping[str, list[str]]:
    """The distributions each top-level package comes from: read once a run, since it reads
    every installed distribution's list of files (a run writes an issue body a failure)."""
    return importlib.metadata.packages_distributions()


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
