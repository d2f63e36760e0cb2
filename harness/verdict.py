"""Turn violations into failure text that reads without the test's source.

Every failure names the invariant, says what was expected and what was got, gives the
case, and shows the per-rank indices (shortened when long).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NoReturn, Sequence

import numpy as np

from .case import Case, Observation
from .contracts import INVARIANTS

SHOWN_HEAD = 12
SHOWN_TAIL = 4
SHOWN_RANKS = 8


class PropertyFailure(AssertionError):
    """An invariant does not hold for a case."""


class SamplerFault(AssertionError):
    """The sampler raised or yielded something that is not an index."""


class SamplerHang(BaseException):
    """The sampler did not return within the time bound.

    A BaseException on purpose: Hypothesis shrinks on Exception, and shrinking a hang
    would cost one full timeout per step. This one ends the test at once, reporting
    the case that hung as drawn.
    """


@dataclass(frozen=True)
class Violation:
    flag: str
    message: str

    @property
    def title(self) -> str:
        return INVARIANTS.get(self.flag, self.flag)


def shorten(values: Sequence[int] | np.ndarray, head: int = SHOWN_HEAD, tail: int = SHOWN_TAIL) -> str:
    items = [int(v) for v in values[: head + tail + 1]] if len(values) <= head + tail else None
    if items is not None:
        return "[" + ", ".join(map(str, items)) + "]"
    first = ", ".join(str(int(v)) for v in values[:head])
    last = ", ".join(str(int(v)) for v in values[-tail:])
    return f"[{first}, ... {len(values) - head - tail} more ..., {last}]"


def describe_ranks(observation: Observation) -> str:
    lines = []
    for rank, indices in enumerate(observation.indices[:SHOWN_RANKS]):
        reported = observation.reported_lengths[rank]
        lines.append(f"  rank {rank} ({len(indices)} indices, len()={reported}): {shorten(indices)}")
    hidden = len(observation.indices) - SHOWN_RANKS
    if hidden > 0:
        lines.append(f"  ... {hidden} more ranks")
    return "\n".join(lines)


def failure_text(violations: Iterable[Violation], case: Case, observation: Observation | None) -> str:
    violations = list(violations)
    lines = [f"[{v.title}] {v.message}" for v in violations]
    lines.append(f"  case: {case.describe()}")
    if observation is not None:
        lines.append(describe_ranks(observation))
    return "\n".join(lines)


def expect_holds(observation: Observation, violations: Iterable[Violation]) -> None:
    """Raise :class:`PropertyFailure` listing ``violations`` if there are any."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    violations = list(violations)
    if violations:
        raise PropertyFailure(failure_text(violations, observation.case, observation))


def fail(flag: str, message: str, case: Case, observation: Observation | None = None) -> NoReturn:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    raise PropertyFailure(failure_text([Violation(flag, message)], case, observation))
