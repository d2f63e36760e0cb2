"""How a failed invariant's counterexamples are shown: by kind of failure (``evidence.failure_kind``:
messages alike once their values are masked), each kind by its smallest counterexample, a
shrunk one first, with how often it was seen; the summary's and check_sampler's short form,
and the certificate's text of each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.evidence import counted, failure_kind
from sampler_conformance.execution.mesh import DRAWN_NOTE


@dataclass(frozen=True)
class FailureKind:
    """The counterexamples of one invariant that read alike (``evidence.failure_kind``): the
    one shown, shrunk where one was, else the smallest; the cases and tests it was seen on."""

    shown: dict[str, Any]
    cases: int
    tests: int


def failure_kinds(records: Sequence[dict[str, Any]]) -> list[FailureKind]:
    """An invariant's counterexamples by kind, the kind seen on most cases first."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_kind.setdefault(failure_kind(record["title"], record["message"]), []).append(record)
    kinds = [
        FailureKind(
            shown=min(alike, key=shown_first),
            cases=sum(record.get("cases", 1) for record in alike),
            tests=len({record["test"] for record in alike}),
        )
        for alike in by_kind.values()
    ]
    return sorted(kinds, key=lambda kind: -kind.cases)


def shown_first(record: dict[str, Any]) -> tuple[bool, int, int]:
    """Shrunk before as drawn, then the smallest dataset, then the fewest ranks."""
    parameters = record.get("parameters") or {}
    return bool(record.get("as_drawn")), parameters.get("dataset_size", 0), parameters.get("world_size", 0)


# The kinds of failure per failed invariant the terminal summary and check_sampler's
# explanation show, each by one counterexample; the certificate has every counterexample.
MAX_SHOWN_COUNTEREXAMPLES = 3


def _on_drawn_mesh(record: dict[str, Any]) -> str:
    """``, on mesh dp2.cp2`` where the counterexample's mesh was drawn (its test id says only drawn4)."""
    meshes = [d.removeprefix(DRAWN_NOTE) for d in record.get("draws", []) if d.startswith(DRAWN_NOTE)]
    return f", on mesh {meshes[0]}" if meshes else ""


def shown_counterexamples(records: Sequence[dict[str, Any]], indent: str, rest_in: str, whole: bool) -> list[str]:
    """One counterexample of each of the first MAX_SHOWN_COUNTEREXAMPLES kinds of an
    invariant's failures (``[title] message``, the first line unless ``whole``; ``case
    (test)``; how often that kind was seen, where there is more than one case, and why it is
    shown as drawn, if it is not shrunk), then how many kinds more there are in ``rest_in``:
    the summary's and check_sampler's short form."""
    kinds = failure_kinds(records)
    total = sum(kind.cases for kind in kinds)
    lines = []
    for kind in kinds[:MAX_SHOWN_COUNTEREXAMPLES]:
        record = kind.shown
        message = record["message"] if whole else record["message"].splitlines()[0]
        lines.append(f"{indent}[{record['title']}] {message}")
        lines.append(f"{indent}  {record.get('case') or ''} ({record['test']}{_on_drawn_mesh(record)})")
        notes = [_seen(kind, total)] if total > 1 else []
        if record.get("as_drawn"):
            notes.append(f"as drawn, not shrunk: {record['as_drawn']}")
        if notes:
            lines.append(f"{indent}  " + "; ".join(notes))
    hidden = kinds[MAX_SHOWN_COUNTEREXAMPLES:]
    if hidden:
        cases = sum(kind.cases for kind in hidden)
        lines.append(
            f"{indent}... {counted(len(hidden), 'more kind')} of failure, on {counted(cases, 'case')}: {rest_in}"
        )
    return lines


def _seen(kind: FailureKind, total: int) -> str:
    """``seen on 93 of the 97 cases that failed it, in 24 tests``."""
    of = f"{kind.cases} of the {total}" if kind.cases < total else f"all {total}"
    return f"seen on {of} cases that failed it, in {counted(kind.tests, 'test')}"


def counterexample_text(record: dict[str, Any]) -> str:
    """One violation record as it reads in the summary and the certificate's Markdown."""
    lines = [f"[{record['title']}] {record['message']}"]
    if record.get("case"):
        lines.append(f"case: {record['case']}")
    lines += record.get("ranks", [])
    lines += record.get("draws", [])
    if record.get("cases", 1) > 1:
        lines.append(f"the smallest of {record['cases']} cases that failed alike")
    if record.get("as_drawn"):
        lines.append(f"as drawn, not shrunk: {record['as_drawn']}")
    return "\n".join(lines)
