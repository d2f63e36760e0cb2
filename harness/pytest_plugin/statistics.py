"""The frequency tests a statistical invariant's test ran (``harness.core.frequencies``), kept
per pytest test and summed up for the certificate: how many, their draws, the smallest bound
on a p-value seen and the threshold it was held to, under the certification's budget.

A test hands each verdict to :func:`record`; the plugin calls :func:`begin_test` before each
test and :func:`summary` when it ends, and carries the summary on the test's report."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sampler_conformance.core.frequencies import FrequencyVerdict, summarize

_RECORDED: list[FrequencyVerdict] = []


def begin_test() -> None:
    _RECORDED.clear()


def record(verdicts: FrequencyVerdict | Iterable[FrequencyVerdict]) -> None:
    _RECORDED.extend([verdicts] if isinstance(verdicts, FrequencyVerdict) else verdicts)


def summary() -> dict[str, Any] | None:
    """What the certificate says of this test's frequency tests; None when it ran none."""
    return summarize(_RECORDED)
