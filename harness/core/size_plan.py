"""The draws planned from the cost measured before them: no case is drawn whose reading is
projected past a budget, so a slow sampler's certification takes about as long as a fast
one's, on the same number of judged cases, and its verdict says which sizes it left out.

The cost probe (``execution/cost.py``) reads rank 0's whole pass at the largest N the
subject draws, on 8 ranks and on the most ranks drawn (``Cost.passes``). A pass on W ranks
is read off the line through them in log W and log time, and scaled linearly to a smaller
N. Ranks simulated in one process are read in turn, so a case costs W passes there; in a
real process group, one. A case past :data:`CASE_BUDGET_S` (``--case-budget``) has its N
cut, for its W, to the largest step of :data:`STEPS` (fractions of the largest N) that
fits, and never below the last step: a certification leaves out the largest sizes of a slow
sampler, never the edges (N = 0, 1, W +- 1, ...) nor its cases' count.

A step, not the exact largest N that fits: the measurement moves with the machine's load,
and the draws should not move with it (a certification draws the same cases on every run,
``pytest_plugin/profiles.py``). Only a cost within a few percent of a step's bound can
draw differently on two runs; ``--case-budget=0`` plans nothing, for exactly the draws of
a run without the probe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .cost import Cost, Reading, large, seconds

CASE_BUDGET_S = 0.25  # the passes of one case, read in turn: a few such cases a second
FASTEST_PASS_S = 1e-6  # a pass timed at nothing: the clock's grain
STEPS = (1, 1 / 2, 1 / 5, 1 / 10, 1 / 20, 1 / 50, 1 / 100)  # of the largest N drawn, largest first


@dataclass(frozen=True)
class SizePlan:
    """The passes measured, and the budget of a case's passes."""

    passes: tuple[Reading, ...]  # at one N (the largest drawn), on few and on many ranks
    budget_s: float = CASE_BUDGET_S

    @classmethod
    def of(cls, cost: Cost | None, budget_s: float) -> SizePlan | None:
        """The plan the measured cost gives; None where nothing was measured or planned."""
        if cost is None or budget_s <= 0:
            return None
        timed = tuple(r for r in cost.passes if r.pass_s is not None)
        return cls(timed, budget_s) if timed else None

    @property
    def size(self) -> int:
        return self.passes[0].size

    def pass_s(self, world_size: int) -> float:
        """One rank's whole pass at the largest N on ``world_size`` ranks: on the line through
        the two measured in log W and log time (a pass of the rank's share falls as 1/W; one
        that reads every rank's batches to keep its own stays flat)."""
        measured = sorted(self.passes, key=lambda r: r.world_size)
        low, high = measured[0], measured[-1]
        a, b = (max(r.pass_s or 0.0, FASTEST_PASS_S) for r in (low, high))
        if low.world_size == high.world_size:
            return a
        slope = math.log(b / a) / math.log(high.world_size / low.world_size)
        return a * (world_size / low.world_size) ** slope

    def case_s(self, size: int, world_size: int, in_turn: bool) -> float:
        """A case of ``size`` items on ``world_size`` ranks: its passes, read in turn or at once."""
        return self.pass_s(world_size) * (size / self.size) * (world_size if in_turn else 1)

    def largest_size(self, world_size: int, in_turn: bool, ceiling: int) -> int:
        """The largest N to draw on ``world_size`` ranks, at most ``ceiling``."""
        for step in STEPS:
            size = math.ceil(self.size * step)
            if self.case_s(size, world_size, in_turn) <= self.budget_s:
                return min(size, ceiling)
        return min(math.ceil(self.size * STEPS[-1]), ceiling)

    def lines(self, most_ranks: int, group_sizes: tuple[int, ...]) -> list[str]:
        """The summary's words: what the passes cost, and the sizes left out, where any."""
        timed = ", ".join(f"{seconds(r.pass_s)} on W={r.world_size}" for r in self.passes)
        cuts = []
        for label, worlds, in_turn in (
            ("simulated ranks", range(1, most_ranks + 1), True),
            ("real process groups", group_sizes, False),
        ):
            cut = [(w, self.largest_size(w, in_turn, self.size)) for w in worlds]
            cut = [(w, n) for w, n in cut if n < self.size]
            if cut:
                w, n = cut[0]
                widest, least = cut[-1]
                reach = f"N up to {n:,} from W={w}" + (f", {least:,} at W={widest}" if least != n else "")
                cuts.append(
                    f"{label}: {reach} (a case of N={large(self.size)} on W={widest}: about {seconds(self.case_s(self.size, widest, in_turn))})"
                )
        if not cuts:
            return []
        return [
            f"draws planned from the cost: one rank's whole pass of N={large(self.size)} took {timed}; a case past "
            f"{seconds(self.budget_s)} of passes is not drawn, and the sizes past it are not judged (--case-budget)",
            *(f"  {cut}" for cut in cuts),
        ]


_plan: SizePlan | None = None  # this process's plan, set once the cost is known (the pytest plugin)


def use(plan: SizePlan | None) -> None:
    global _plan
    _plan = plan


def largest_size(world_size: int, in_turn: bool, ceiling: int) -> int:
    """The largest N this process's plan draws on ``world_size`` ranks: ``ceiling`` without a plan."""
    return ceiling if _plan is None else _plan.largest_size(world_size, in_turn, ceiling)
