"""Hypothesis strategies for batch cases: per-item lengths (equal, uniform, skewed, a few
huge items, items over the budget), budgets, rates, world sizes, seeds and epochs. Every draw
is labelled."""

from __future__ import annotations

from hypothesis import strategies as st

from sampler_conformance.execution.scenario import Ranks

from .case import BatchCase
from .contracts import BatchContract
from .plug import BatchPlug

MAX_DATASET_SIZE = 200
# Every step of a lock-step epoch in a real group is an all-reduce, and so is every step of
# shrinking a failing case: N kept where that is quick.
MAX_GROUP_DATASET_SIZE = 48
MAX_SIMULATED_WORLD_SIZE = 8
MAX_LENGTH = 1000
SEED_LIMIT = 2**32
# Plans compared for a difference (another epoch, another seed) have at least this many items
# and this many batches per rank: two shuffled plans of them are then equal by chance with a
# probability too small to matter.
MIN_COMPARED_ITEMS = 32
MIN_COMPARED_BATCHES_PER_RANK = 4
# A global step (micro_batches' batch_size) holds W to this many times W items.
MAX_STEP_PER_RANK = 8
# The Poisson rates drawn: the smallest makes about a hundred steps an epoch.
SAMPLE_RATES = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


def most_items(ranks: Ranks) -> int:
    """The largest N drawn for a case read on ``ranks``: real groups step in lock step."""
    return MAX_DATASET_SIZE if ranks.world_size is None else MAX_GROUP_DATASET_SIZE


def epochs() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.integers(0, 2**31 - 1))


@st.composite
def length_lists(draw: st.DrawFn, size: int, budget: int) -> tuple[int, ...]:
    """``size`` lengths of 1 to MAX_LENGTH, of a shape that matters to a bucketing sampler.

    A failure that depends on the order seldom shrinks in N: the batches come from a
    permutation of all N items, and one item fewer shuffles them all differently
    (docs/batch-samplers.md, "Draws": what was tried, and why N is drawn this way)."""
    if size == 0:
        return ()
    shape = draw(st.sampled_from(["equal", "uniform", "skewed", "few huge", "over budget"]), label="lengths")
    if shape == "equal":
        return (draw(st.integers(1, MAX_LENGTH), label="length"),) * size
    if shape == "uniform":
        return tuple(draw(st.lists(st.integers(1, 100), min_size=size, max_size=size), label="uniform lengths"))
    short = st.integers(1, 20)
    if shape == "skewed":  # most items short, about one in ten long
        long = st.integers(200, MAX_LENGTH)
        picks = st.lists(st.one_of(short, short, short, short, short, short, short, short, short, long), min_size=size)
        return tuple(draw(picks.map(lambda xs: xs[:size]), label="skewed lengths"))
    lengths = draw(st.lists(short, min_size=size, max_size=size), label="short lengths")
    huge = draw(st.sets(st.integers(0, size - 1), min_size=1, max_size=min(3, size)), label="huge items")
    if shape == "few huge":  # within the budget, but most of it
        big = st.integers(max(1, budget // 2), max(1, budget))
    else:  # longer than the whole budget: the rule is that such an item is yielded alone
        big = st.integers(budget + 1, budget + MAX_LENGTH)
    return tuple(draw(big, label="huge length") if i in huge else n for i, n in enumerate(lengths))


def draw_batch_case(
    data: st.DataObject,
    plug: BatchPlug,
    contract: BatchContract,
    *,
    world_size: int | None = None,
    min_dataset_size: int = 0,
    max_dataset_size: int = MAX_DATASET_SIZE,
) -> BatchCase:
    """Draw one case for ``plug`` under ``contract``; a value given fixes that field."""
    if world_size is None:
        world_size = data.draw(st.integers(1, MAX_SIMULATED_WORLD_SIZE), label="W (world size)")
    size = data.draw(st.integers(min_dataset_size, max_dataset_size), label="N (dataset size)")
    seed = data.draw(st.one_of(st.sampled_from([0, 1, SEED_LIMIT - 1]), st.integers(0, SEED_LIMIT - 1)), label="seed")
    seed = seed if plug.supports("seed") else 0
    if contract.parameter == "sample_rate":
        rate = data.draw(st.sampled_from(SAMPLE_RATES), label="sample_rate")
        return BatchCase(dataset_size=size, world_size=world_size, seed=seed, lengths=(1,) * size, sample_rate=rate)
    if contract.parameter == "batch_size":  # at least one item for every rank's micro-batch
        step = data.draw(st.integers(world_size, MAX_STEP_PER_RANK * world_size), label="batch_size")
        lengths = data.draw(length_lists(size, MAX_LENGTH), label="lengths")
        return BatchCase(dataset_size=size, world_size=world_size, seed=seed, lengths=lengths, batch_size=step)
    budget = data.draw(st.integers(1, 4 * MAX_LENGTH), label="max_tokens")
    lengths = data.draw(length_lists(size, budget), label="lengths")
    return BatchCase(dataset_size=size, world_size=world_size, seed=seed, lengths=lengths, max_tokens=budget)


def comparable(case: BatchCase) -> bool:
    """Whether two conforming plans of ``case`` differ but by a negligible chance: enough items,
    and, for a budget, enough of them that each rank gets several batches."""
    if case.dataset_size < MIN_COMPARED_ITEMS:
        return False
    if case.sample_rate:  # at rate 1 every step draws the whole shard: nothing random to compare
        return case.sample_rate < 1
    if case.batch_size:
        return case.dataset_size >= MIN_COMPARED_BATCHES_PER_RANK * case.batch_size
    spread = sum(min(length, case.max_tokens) for length in case.lengths)
    return spread >= MIN_COMPARED_BATCHES_PER_RANK * case.world_size * case.max_tokens
