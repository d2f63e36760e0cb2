"""One drawn configuration of a batch sampler: the items' lengths, the ranks, the budget or the rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.case import Case
from sampler_conformance.subjects.common.reading import read_limit as limit_for

# The parameters a contract about another leaves at 0 (BatchContract.parameter): not sizes judged.
UNSET_WHEN_ZERO = ("max_tokens", "batch_size")


@dataclass(frozen=True)
class BatchCase(Case):
    """Item ``i`` of ``dataset_size`` has length ``lengths[i]`` (tokens, frames, seconds: the
    unit is the sampler's); ``max_tokens`` is the budget one batch may cost, ``batch_size``
    (0: none) the items of one global step that the ranks' micro-batches share, ``sample_rate``
    the probability with which a Poisson sampler draws each item of its shard at each step.
    A contract passes the one it is about (``BatchContract.parameter``)."""

    lengths: tuple[int, ...] = ()
    max_tokens: int = 0
    sample_rate: float = 0.0
    batch_size: int = 0

    def __post_init__(self) -> None:
        if len(self.lengths) != self.dataset_size:
            raise ValueError(f"{len(self.lengths)} lengths for N={self.dataset_size} items")

    def sampler_options(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "sample_rate": self.sample_rate,
            "batch_size": self.batch_size,
        }

    def sizes(self) -> dict[str, int]:
        """Its sizes, less the parameters its contract does not give (0: a micro-batch case has no budget)."""
        return {name: value for name, value in super().sizes().items() if value or name not in UNSET_WHEN_ZERO}

    def describe(self) -> str:
        shown = list(self.lengths) if len(self.lengths) <= 16 else f"{len(self.lengths)} lengths"
        if self.sample_rate:
            made = f"sample_rate={self.sample_rate}"
        elif self.batch_size:
            made = f"lengths={shown}, batch_size={self.batch_size}"
        else:
            made = f"lengths={shown}, max_tokens={self.max_tokens}"
        return f"N={self.dataset_size}, W={self.world_size}, {made}, seed={self.seed}, epoch={self.epoch}"


def read_limit(case: BatchCase) -> int:
    """Batches one rank may yield in an epoch before it counts as never stopping: every item in
    a batch of its own, or every Poisson step, four times over."""
    steps = round(1 / case.sample_rate) if case.sample_rate else 0
    return limit_for(case.dataset_size + steps)
