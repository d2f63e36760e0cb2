"""Hypothesis strategies for cases: dataset sizes, world sizes, seeds, epochs, batch sizes.

Draws lean on the edges where samplers break (N = 0, 1, N < W, N = W, W +- 1, multiples
of W) and still reach N = 10,000, W = 64, seeds over the whole 63-bit range (or the part of
it the sampler accepts, ``harness.subjects.index_sampler.seed_range``) and epochs up to 2**31. Every draw is
labelled, so a falsifying example reads "Draw 2 (N): 5".
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from sampler_conformance.core import size_plan

from .case import MAX_DATASET_SIZE, MAX_WORLD_SIZE, IndexCase
from .contracts import LEAST_LABELLED_BATCH, TORCH, SamplerContract
from .plug import SamplerPlug
from .seed_range import EPOCH_LIMIT, SEED_LIMIT, seed_limit

# The edges of 32-bit generators; the top of the range drawn is added to them.
SPECIAL_SEEDS = (0, 1, 2**31 - 1, 2**32 - 1, 2**32)


# The strategies below are cached. Hypothesis validates a strategy on its first draw: built
# anew for every case, that took about 0.35 s of the 4.5 s of CPU an in-process certification
# of torch's sampler takes, the same draws either way.


@functools.cache
def world_sizes(max_world_size: int = MAX_WORLD_SIZE) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(1, min(8, max_world_size)), st.integers(1, max_world_size))


@functools.cache
def dataset_sizes(world_size: int, max_size: int = MAX_DATASET_SIZE) -> st.SearchStrategy[int]:
    w = world_size
    edges = sorted({0, 1, w // 2, max(w - 1, 0), w, w + 1, 2 * w - 1, 2 * w, 2 * w + 1, 3 * w, 7 * w + 3})
    return st.one_of(
        st.sampled_from([n for n in edges if n <= max_size]),
        st.integers(0, min(max_size, 8 * w + 8)),
        st.integers(0, max_size),
    )


@functools.cache
def seeds(limit: int = SEED_LIMIT) -> st.SearchStrategy[int]:
    """Seeds below ``limit``: the edges, 32-bit seeds, and any."""
    edges = tuple(seed for seed in SPECIAL_SEEDS if seed < limit - 1) + (limit - 1,)
    return st.one_of(st.sampled_from(edges), small_seeds(limit), st.integers(0, limit - 1))


def small_seeds(limit: int = SEED_LIMIT) -> st.SearchStrategy[int]:
    """Seeds below 2**32 (and ``limit``): the ones a 32-bit generator tells apart."""
    return st.integers(0, min(2**32, limit) - 1)


def epochs() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.integers(0, EPOCH_LIMIT - 1))


def draw_case(
    data: st.DataObject,
    plug: SamplerPlug,
    *,
    drop_last: bool,
    shuffle: bool | None = None,
    min_dataset_size: int = 0,
    max_world_size: int = MAX_WORLD_SIZE,
    contract: SamplerContract = TORCH,
    world_size: int | None = None,
    max_dataset_size: int = MAX_DATASET_SIZE,
) -> IndexCase:
    """Draw one case for ``plug``. Options the sampler lacks keep their defaults.

    ``shuffle=None`` draws it (when the sampler takes it); a bool fixes it. A given
    ``world_size`` is used as is (a real process group has the size it has). N is drawn up to
    what the plan from the measured cost affords on W ranks (``core/size_plan.py``): read in
    turn where W was drawn (simulated ranks), at once where it was given.
    """
    if not contract.finite:
        min_dataset_size = max(min_dataset_size, 1)  # an endless sampler over nothing never yields
    if contract.labels:
        min_dataset_size = max(min_dataset_size, LEAST_LABELLED_BATCH)  # two labels of two items
    in_turn = world_size is None
    if world_size is None:
        world_size = data.draw(world_sizes(max_world_size), label="W (num_replicas)")
    max_dataset_size = max(min_dataset_size, size_plan.largest_size(world_size, in_turn, max_dataset_size))
    size = data.draw(_dataset_sizes_from(world_size, max_dataset_size, min_dataset_size), label="N (dataset size)")
    if shuffle is None:
        shuffle = data.draw(st.booleans(), label="shuffle") if plug.supports("shuffle") else True
    seed = data.draw(seeds(seed_limit(plug)), label="seed") if plug.supports("seed") else 0
    if contract.labels:
        batch_size = 2 * data.draw(st.integers(2, max(2, size // 2 + 1)), label="batch_size / 2")
        label_counts = data.draw(labellings(size), label="label_counts")
    else:
        batch_size, label_counts = data.draw(st.integers(1, size + 2), label="batch_size"), ()
    repeats = data.draw(repeat_counts(world_size * batch_size), label="G (repeats)") if contract.repeats else 1
    # Portrait items (aspect bucket 0): none, all, or any count between.
    portraits = data.draw(st.integers(0, size), label="portraits") if contract.aspects else None
    return IndexCase(
        dataset_size=size,
        world_size=world_size,
        shuffle=shuffle,
        seed=seed,
        drop_last=drop_last,
        batch_size=batch_size,
        repeats=repeats,
        label_counts=label_counts,
        portraits=portraits,
    )


@functools.cache
def _dataset_sizes_from(world_size: int, max_size: int, min_size: int) -> st.SearchStrategy[int]:
    return dataset_sizes(world_size, max_size).filter(lambda n: n >= min_size)


def repeat_counts(generation_batch: int, most: int = 8) -> st.SearchStrategy[int]:
    """G, the copies of each index in a generation batch of ``generation_batch`` = W x B
    items, which G divides (trl refuses any other); G need not divide B, so a group may
    span ranks."""
    return st.sampled_from([g for g in range(1, most + 1) if generation_batch % g == 0])


MAX_LABELS = 8


@st.composite
def labellings(draw: st.DrawFn, dataset_size: int) -> tuple[int, ...]:
    """How many of ``dataset_size`` (at least 4) items each label has: two labels of at least
    two items (else nothing can be grouped), and up to 8 labels in all, so that some have one
    item, one dominates, or all are alike."""
    labels = draw(st.integers(2, min(MAX_LABELS, dataset_size - 2)), label="labels")
    rest = dataset_size - 4  # two items each of the first two labels are set aside
    cuts = sorted(draw(st.lists(st.integers(0, rest), min_size=labels - 1, max_size=labels - 1), label="cuts"))
    counts = [b - a for a, b in zip([0, *cuts], [*cuts, rest], strict=True)]
    counts[0] += 2
    counts[1] += 2
    # A label of no items is no label: it goes, and its neighbours keep theirs.
    return tuple(count for count in counts if count)
