"""lhotse (PyPI ``lhotse``): ``DynamicBucketingSampler`` and ``SimpleCutSampler``, the
duration-budget samplers of speech training.

    sampler_conformance.adapters.lhotse:DynamicBucketingSampler   contract dynamic_batches
    sampler_conformance.adapters.lhotse:SimpleCutSampler          contract dynamic_batches
    sampler_conformance.adapters.lhotse:WeightedSimpleCutSampler  contract weighted_without_replacement

Item ``i`` is a cut ``c{i}`` lasting ``lengths[i]`` seconds, metadata only (the samplers
never read audio); ``max_tokens`` is ``max_duration``. Each is built with lhotse's defaults
(``drop_last=False``) and ``shuffle=True``, ``seed``, ``world_size`` and ``rank`` given. They
yield ``CutSet`` batches: :class:`CutIndices` yields each as the list of its cuts' indices
(a padding copy, ``c{i}_dup{k}``, is item ``i`` again) and passes ``set_epoch`` on. Neither
has ``__len__``. lhotse budgets the padded batch: its longest cut times its number of cuts
(``TimeConstraint``), so both declare ``batch_cost = "padded"``.

``WeightedSimpleCutSampler`` is a weighted sampler (``make(weights, *, num_replicas, rank,
num_samples, seed)``): its ``num_samples`` is the draws of all ranks together, W x the
suite's per rank, and ``max_cuts=1`` makes each of its batches one draw, which
:class:`DrawnCuts` yields as the cut's index.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from . import needs, require

SAMPLE_RATE = 16000


class CutIndices:
    """A lhotse sampler, its CutSet batches read as lists of item indices."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.sampler:
            yield [int(cut.id[1:].partition("_")[0]) for cut in batch]

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)


class DrawnCuts(CutIndices):
    """A lhotse sampler of one cut a batch, read as the index of each cut it draws."""

    def __iter__(self) -> Iterator[list[int]]:
        for batch in super().__iter__():
            yield from batch  # type: ignore[misc]


def cuts_of(lengths: Sequence[int], adapter: str) -> Any:
    """One metadata-only cut per item, ``c{i}``, of ``lengths[i]`` seconds."""
    lhotse = require("lhotse", "lhotse", adapter)
    source = [lhotse.AudioSource(type="file", channels=[0], source="/dev/null")]
    return lhotse.CutSet.from_cuts(
        lhotse.MonoCut(
            id=f"c{i}",
            start=0,
            duration=float(length),
            channel=0,
            recording=lhotse.Recording(
                id=f"r{i}",
                sources=source,
                sampling_rate=SAMPLE_RATE,
                num_samples=length * SAMPLE_RATE,
                duration=float(length),
            ),
        )
        for i, length in enumerate(lengths)
    )


def _sampler(name: str, lengths: Sequence[int], num_replicas: int, rank: int, max_tokens: int, seed: int) -> CutIndices:
    """lhotse's sampler ``name`` over the cuts of ``lengths``, built with its defaults but these."""
    adapter = f"{__name__}:{name}"
    sampling = require("lhotse.dataset.sampling", "lhotse", adapter)
    sampler_class = getattr(sampling, name)
    cuts = cuts_of(lengths, adapter)
    return CutIndices(
        sampler_class(cuts, max_duration=float(max_tokens), shuffle=True, seed=seed, world_size=num_replicas, rank=rank)
    )


@needs("lhotse", "lhotse")
def DynamicBucketingSampler(
    lengths: Sequence[int], *, num_replicas: int, rank: int, max_tokens: int, seed: int = 0
) -> CutIndices:
    return _sampler("DynamicBucketingSampler", lengths, num_replicas, rank, max_tokens, seed)


@needs("lhotse", "lhotse")
def SimpleCutSampler(
    lengths: Sequence[int], *, num_replicas: int, rank: int, max_tokens: int, seed: int = 0
) -> CutIndices:
    return _sampler("SimpleCutSampler", lengths, num_replicas, rank, max_tokens, seed)


DynamicBucketingSampler.batch_cost = "padded"  # type: ignore[attr-defined]
SimpleCutSampler.batch_cost = "padded"  # type: ignore[attr-defined]


@needs("lhotse", "lhotse")
def WeightedSimpleCutSampler(
    weights: Sequence[float], *, num_replicas: int, rank: int, num_samples: int, seed: int = 0
) -> DrawnCuts:
    adapter = f"{__name__}:WeightedSimpleCutSampler"
    sampling = require("lhotse.dataset.sampling", "lhotse", adapter)
    cuts = cuts_of([1] * len(weights), adapter)
    return DrawnCuts(
        sampling.WeightedSimpleCutSampler(
            cuts,
            list(weights),
            num_samples=num_samples * num_replicas,
            max_cuts=1,
            shuffle=True,
            seed=seed,
            world_size=num_replicas,
            rank=rank,
        )
    )
