"""The numeric edge a weighted sampler is judged at under ``--scale``: 2^24 + 1 weights.

``torch.multinomial`` refuses more than 2^24 categories (pytorch/pytorch #2576), and every
sampler that draws with it over the whole dataset inherits the refusal; a chunked workaround
that returns each chunk's local indices never draws past 2^24 (NVIDIA/physicsnemo #1846).
So the case puts half the weight on the last item, 2^24, past the cap: a sampler that never
draws it fails the frequency test, one that refuses fails ``weighted_runs``. Two ranks, so
that reading every rank is affordable and every invariant is judged as at N <= 10,000.
"""

from __future__ import annotations

from .case import WeightedCase

EDGE_SIZES = (2**24 + 1,)
EDGE_WORLD = 2
# What the cap breaks: a sampler that refuses past it, or never draws past it. (The other
# one-epoch invariants say nothing new there: the edge case has no item of weight 0, and its
# draws fit any int type.)
JUDGED = ("weighted_runs", "frequencies_match_weights")
SAID = f"{EDGE_SIZES[0]:,} weights on W = {EDGE_WORLD} (past torch.multinomial's 2^24 categories); --scale judges them"


def edge_case(size: int, num_samples: int) -> WeightedCase:
    """``size`` items of weight 1 but the last, which weighs as much as all the others together."""
    heavy = float(size - 1)
    return WeightedCase(size, EDGE_WORLD, weights=(1.0,) * (size - 1) + (heavy,), num_samples=num_samples, epoch=1)
