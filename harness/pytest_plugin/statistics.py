"""The frequency tests a statistical invariant's test ran (``harness.core.frequencies``), kept
per pytest test and summed up for the certificate: how many, their draws, the smallest bound
on a p-value seen and the threshold it was held to, under the certification's budget. And
the measurements a test takes without judging them (the padding a bucketing sampler wastes).

A test hands each verdict to :func:`record`, each measured value to :func:`measure`; the
plugin calls :func:`begin_test` before each test, and :func:`summary` and :func:`measured`
when it ends, and carries them on the test's report."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sampler_conformance.core import measurements
from sampler_conformance.core.frequencies import FrequencyVerdict, summarize

_RECORDED: list[FrequencyVerdict] = []
_MEASURED: dict[str, list[float]] = {}


def begin_test() -> None:
    _RECORDED.clear()
    _MEASURED.clear()


def record(verdicts: FrequencyVerdict | Iterable[FrequencyVerdict]) -> None:
    _RECORDED.extend([verdicts] if isinstance(verdicts, FrequencyVerdict) else verdicts)


def summary() -> dict[str, Any] | None:
    """What the certificate says of this test's frequency tests; None when it ran none."""
    return summarize(_RECORDED)


def measure(name: str, values: Iterable[float]) -> None:
    """Values of the quantity ``name`` seen in this test: reported, never judged."""
    _MEASURED.setdefault(name, []).extend(values)


def measured() -> dict[str, dict[str, Any]] | None:
    """What the certificate says of this test's measurements; None when it took none."""
    return measurements.summarize(_MEASURED)
