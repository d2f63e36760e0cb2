"""One rank's cost as N grows: the readings the cost probe makes (``harness.execution.cost``),
and what they say, in words and figures: how the cost grows with N, and what it comes to at
a production size (``--production-size``, ``--production-world``).

The growth is fitted over the largest sizes each sweep measured (``execution.cost``), where
it is closest to what larger sizes do (:data:`FITTED`); a figure below the noise floor (:data:`MEMORY_FLOOR`,
:data:`TIME_FLOOR_S`) counts as the floor, so a cost that stays there grows as N^0. The
sweep on W ranks gives the growth with N and the share together (exponent e); the sweep at
a fixed share gives the growth with N alone (a). A size is projected from the largest one
measured on W ranks as figure x (N'/N)^a x (share'/share)^(e - a).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from typing import Any

SIZES = tuple(10**k for k in range(4, 11))  # N measured, in turn: 1e4 to 1e10
WORLD = 8  # the ranks of the first sweep
SHARE = 1_000  # the items per rank of the second sweep
MEMORY_BUDGET = 1 << 30  # a size past this (or TIME_BUDGET_S) is its sweep's last
TIME_BUDGET_S = 0.5  # a few sizes past this take seconds each: the probe costs seconds, not minutes


@dataclass(frozen=True)
class Reading:
    """One size, measured: rank 0 of ``world_size`` ranks over ``size`` items."""

    size: int
    world_size: int
    peak_bytes: int | None = None  # resident memory at its peak, above the process's before the build
    first_s: float | None = None  # from the build to the first item
    per_item_s: float | None = None  # each further item, over ``further`` of them
    further: int = 0
    stopped: str = ""  # why it has no figures: raised, died, passed its memory limit, never yielded
    pass_s: float | None = None  # from the build to the end of the rank's whole pass, where it was read whole

    @property
    def over_budget(self) -> bool:
        return bool(self.stopped) or (self.peak_bytes or 0) > MEMORY_BUDGET or (self.first_s or 0) > TIME_BUDGET_S


MEMORY_FLOOR = 4 << 20  # bytes: the allocator's arenas and pages move this much for nothing
TIME_FLOOR_S = 0.005
# A cost grows with N, not only with the share, when at a fixed share it grew this many times
# over at least SPAN_NEEDED of N, and past the figure after it: a permutation held whole grows
# a thousandfold over 1e4 to 1e7, a cost of the share alone not at all.
GROWTH_CHARGED = 10
SPAN_NEEDED = 100
MEMORY_CHARGED = 64 << 20
TIME_CHARGED_S = 0.25
CHARGED = {"peak_bytes": MEMORY_CHARGED, "first_s": TIME_CHARGED_S}
FLOOR = {"peak_bytes": MEMORY_FLOOR, "first_s": TIME_FLOOR_S}
# The largest sizes an exponent is fitted over: a peak of memory repeats to the page, a time
# moves with the machine's load, so three sizes steady it.
FITTED = {"peak_bytes": 2, "first_s": 3}


@dataclass(frozen=True)
class Growth:
    """A figure at the largest size measured, and its exponent against N there."""

    size: int
    world_size: int
    value: float
    exponent: float | None  # None: one size measured

    def at(self, size: float, world_size: float, exponent_in_share: float) -> float:
        """Projected to ``size`` on ``world_size`` ranks (``exponent_in_share``: e - a)."""
        share, measured_share = size / world_size, self.size / self.world_size
        without_share = (self.exponent or 0.0) - exponent_in_share
        return self.value * (size / self.size) ** without_share * (share / measured_share) ** exponent_in_share


def growth(readings: list[Reading], field: str) -> Growth | None:
    """``field`` (peak_bytes or first_s) at the last size measured, with its exponent: the slope
    of log figure against log N over the last FITTED sizes, least squares."""
    measured = [r for r in readings if getattr(r, field) is not None]
    if not measured:
        return None
    floor = FLOOR[field]
    last = measured[-1]
    exponent = None
    fitted = measured[-FITTED[field] :]
    if len(fitted) >= 2:
        xs = [math.log(r.size) for r in fitted]
        ys = [math.log(max(getattr(r, field), floor)) for r in fitted]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum(
            (x - mean_x) ** 2 for x in xs
        )
        exponent = max(0.0, slope)
    return Growth(last.size, last.world_size, float(getattr(last, field)), exponent)


def spanned(at_share: list[Reading]) -> tuple[Reading, Reading] | None:
    """The smallest and largest sizes measured at a fixed share, where they span SPAN_NEEDED of N."""
    measured = [r for r in at_share if not r.stopped]
    if len(measured) < 2 or measured[-1].size < SPAN_NEEDED * measured[0].size:
        return None
    return measured[0], measured[-1]


def _grew(first: Reading, last: Reading, field: str) -> bool:
    return getattr(last, field) > GROWTH_CHARGED * max(getattr(first, field), FLOOR[field])


def undecided(at_share: list[Reading]) -> bool:
    """Whether a sweep at a fixed share grew GROWTH_CHARGED-fold over its span without passing
    the charged figure: only a larger size says whether it grows with N. (A permutation held
    whole on every rank costs about 56 MB and 0.2 s at N = 1e6, near both charged figures,
    which the machine's load decides; at N = 1e7, ten times them.)"""
    span = spanned(at_share)
    if span is None:
        return False
    first, last = span
    grew = [field for field in CHARGED if _grew(first, last, field)]
    return bool(grew) and all(getattr(last, field) <= CHARGED[field] for field in grew)


READINGS = ("on_world", "at_share", "passes")  # Cost's readings, as the certificate names them


@dataclass(frozen=True)
class Cost:
    """Both sweeps' readings, what they say, and the whole passes at the largest sizes drawn,
    which plan the draws (``core/size_plan.py``)."""

    on_world: list[Reading]
    at_share: list[Reading]
    passes: list[Reading] = dataclasses.field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cost:
        return cls(*([Reading(**r) for r in data[key]] for key in READINGS))

    def to_json(self) -> dict[str, Any]:
        return {key: [vars(r) for r in getattr(self, key)] for key in READINGS}

    def _exponents(self, field: str) -> tuple[Growth | None, float]:
        """The growth on W ranks, and its exponent in the share alone (e - a, at least 0)."""
        overall, alone = growth(self.on_world, field), growth(self.at_share, field)
        if overall is None or overall.exponent is None:
            return overall, 0.0
        in_n = alone.exponent if alone is not None and alone.exponent is not None else overall.exponent
        return overall, max(0.0, overall.exponent - in_n)

    def projected(self, size: float, world_size: float) -> tuple[float | None, float | None]:
        """Peak memory (bytes) and time to the first item (s) of one rank at ``size`` on ``world_size``."""
        figures: list[float | None] = []
        for field, floor in FLOOR.items():
            overall, in_share = self._exponents(field)
            if overall is None:
                figures.append(None)
            else:
                figures.append(replace(overall, value=max(overall.value, floor)).at(size, world_size, in_share))
        return figures[0], figures[1]

    def per_item_s(self) -> float | None:
        """Each further item, as the largest size measured on WORLD ranks timed it (None: not timed)."""
        timed = [r.per_item_s for r in self.on_world if r.per_item_s is not None]
        return timed[-1] if timed else None

    def stopped(self) -> list[Reading]:
        return [r for r in (*self.on_world, *self.at_share) if r.stopped]

    def grows_with_n(self) -> tuple[str, str] | None:
        """Where the cost at a fixed share grew GROWTH_CHARGED-fold past its charged figure: (what, how), or None."""
        span = spanned(self.at_share)
        if span is None:
            return None
        first, last = span
        for field, shown in (("peak_bytes", memory), ("first_s", seconds)):
            if _grew(first, last, field) and getattr(last, field) > CHARGED[field]:
                what = "peak memory" if field == "peak_bytes" else "time to the first item"
                a, b = getattr(first, field), getattr(last, field)
                return what, (
                    f"{shown(a)} at N={large(first.size)} (W={first.world_size:,}) to {shown(b)} at N={large(last.size)} "
                    f"(W={last.world_size:,})"
                )
        return None

    def why_short(self) -> str:
        """Why the sweep at a fixed share ended before it spanned SPAN_NEEDED of N."""
        if not self.at_share:
            return "it measured nothing"
        last = self.at_share[-1]
        if last.stopped:
            return f"at N={large(last.size)}, W={last.world_size:,}: {last.stopped}"
        return (
            f"N={large(last.size)} (W={last.world_size:,}) already cost {memory(last.peak_bytes)} and "
            f"{seconds(last.first_s)} before the first item, past the probe's budget"
        )

    def judged_span(self) -> bool:
        """Whether the sweep at a fixed share spans enough of N to judge its growth."""
        return spanned(self.at_share) is not None

    def lines(self, noun: str, production: tuple[float, int] | None) -> list[str]:
        """The summary's lines: the growth, what stopped a sweep, and the projection where asked."""
        if not self.on_world:
            return []
        parts = []
        for field, what, shown in (("peak_bytes", "memory", memory), ("first_s", f"first {noun}", seconds)):
            overall = growth(self.on_world, field)
            if overall is None:
                continue
            rate = "" if overall.exponent is None else f" grows as N^{overall.exponent:.1f},"
            parts.append(f"{what}{rate} {shown(overall.value)} at N={large(overall.size)}")
        if not parts:  # the first size stopped: nothing to fit
            first = self.on_world[0]
            return [f"cost per rank: not measured: at N={large(first.size)}, W={first.world_size:,}: {first.stopped}"]
        per_item = self.per_item_s()
        if per_item is not None:
            parts.append(f"{seconds(per_item)} per further {noun}")
        sizes = f"N={large(self.on_world[0].size)} to {large(self.on_world[-1].size)} on W={WORLD}"
        lines = [f"cost per rank (rank 0, measured before the draws, {sizes}): {'; '.join(parts)}"]
        grows = self.grows_with_n()
        if grows is not None:
            lines.append(
                f"  at a fixed share of {SHARE:,} per rank, its {grows[0]} grew from {grows[1]}: it grows with N, not "
                f"with the rank's share"
            )
        for reading in self.stopped():
            lines.append(f"  at N={large(reading.size)}, W={reading.world_size:,}: {reading.stopped}")
        if production is not None:
            lines.append(self.projection_line(*production))
        return lines

    def projection_line(self, size: float, world_size: int) -> str:
        peak, first = self.projected(size, world_size)
        figures = " and ".join(
            ("under " if value <= floor else "about ") + shown(value)
            for value, floor, shown in ((peak, MEMORY_FLOOR, memory), (first, TIME_FLOOR_S, seconds))
            if value is not None
        )
        largest = self.on_world[-1].size if self.on_world else 0
        return (
            f"projected at N={large(size)}, W={world_size:,}: {figures or 'nothing measured'} per rank before the "
            f"first item (from the growth measured up to N={large(largest)}; the projection is a fit, not a measurement)"
        )


def memory(value: float | None) -> str:
    if value is None:
        return "?"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def seconds(value: float | None) -> str:
    if value is None:
        return "?"
    if value >= 3600:
        return f"{value / 3600:.3g} h"
    if value >= 60:
        return f"{value / 60:.3g} min"
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} µs"


def large(number: float) -> str:
    """``1e7``, ``3.5e9``; below 1e4 as it is: ``1,000``."""
    if number < 1e4:
        return f"{number:,.0f}"
    exponent = math.floor(math.log10(number))
    mantissa = round(number / 10**exponent, 2)
    return f"{mantissa:g}e{exponent}"
