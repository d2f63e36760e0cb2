"""Measurements: quantities a test reports without judging them (the share of a padded batch
a bucketing sampler wastes), summed up per test and per invariant for the certificate.
Each quantity is a fraction, 0 to 1."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def summarize(measured: Mapping[str, Sequence[float]]) -> dict[str, dict[str, Any]] | None:
    """Per quantity: how many values, their mean and their largest; None for none."""
    summaries = {
        name: {"values": len(values), "mean": sum(values) / len(values), "max": max(values)}
        for name, values in measured.items()
        if values
    }
    return summaries or None


def merge(all_summaries: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]] | None:
    """Several summaries (:func:`summarize`) as one."""
    merged: dict[str, dict[str, Any]] = {}
    for summaries in all_summaries:
        for name, summary in summaries.items():
            total = merged.setdefault(name, {"values": 0, "mean": 0.0, "max": summary["max"]})
            count = total["values"] + summary["values"]
            total["mean"] = (total["mean"] * total["values"] + summary["mean"] * summary["values"]) / count
            total["values"] = count
            total["max"] = max(total["max"], summary["max"])
    return merged or None


def describe(summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """The summaries in a line of the report."""
    shown = "; ".join(
        f"{name}: mean {m['mean']:.1%}, largest {m['max']:.1%}, {m['values']} measured" for name, m in summaries.items()
    )
    return f"measured, not judged: {shown}"
