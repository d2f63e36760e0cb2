"""The numeric edge a token-budget batch sampler is judged at under ``--scale``: batch costs
past int32 and uint32.

Items of 2^30 + 1 tokens (a long audio file's samples, a video's pixels) under a budget of
2^32 + 1: three go to a batch, which costs 3 x 2^30 + 3, past int32's 2^31 - 1; a fourth would
cost 2^32 + 4, past the budget, and past uint32, where it wraps to 4 and seems to fit. A
sampler that sums a batch's cost in int32 sees it negative after two items and never closes
a batch; one in uint32 lets a fourth in. 64 items on 4 ranks: every rank is read whole, and
every invariant of one epoch is judged as at N <= 200.
"""

from __future__ import annotations

from .case import BatchCase

ITEM_TOKENS = 2**30 + 1
BUDGET = 2**32 + 1
EDGE_ITEMS = 64
EDGE_WORLD = 4
EDGE_SIZES = (BUDGET,)  # what --scale judges: the budget (the certificate's run.numeric_edges)
SAID = (
    f"a budget of {BUDGET:,} tokens over items of {ITEM_TOKENS:,} on W = {EDGE_WORLD} (batch costs past int32 "
    f"and uint32); --scale judges it"
)


def edge_case() -> BatchCase:
    return BatchCase(EDGE_ITEMS, EDGE_WORLD, lengths=(ITEM_TOKENS,) * EDGE_ITEMS, max_tokens=BUDGET, seed=0, epoch=1)
