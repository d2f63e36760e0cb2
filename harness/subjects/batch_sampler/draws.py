"""Hypothesis strategies for batch cases: per-item lengths (equal, uniform, skewed, a few
huge items, items over the budget), budgets, rates, world sizes, seeds and epochs. Every draw
is labelled."""

from __future__ import annotations

from hypothesis import strategies as st

from .case import BatchCase
from .contracts import BatchContract
from .plug import BatchPlug

MAX_DATASET_SIZE = 200
MAX_SIMULATED_WORLD_SIZE = 8
MAX_LENGTH = 1000
SEED_LIMIT = 2**32
# Plans compared for a difference (another epoch, another seed) have at least this many items
# and this many batches per rank: two shuffled plans of them are then equal by chance with a
# probability too small to matter.
MIN_COMPARED_ITEMS = 32
MIN_COMPARED_BATCHES_PER_RANK = 4
# The Poisson rates drawn: the smallest makes about a hundred steps an epoch.
SAMPLE_RATES = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


def epochs() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.integers(0, 2**31 - 1))


@st.composite
def length_lists(draw: st.DrawFn, min_size: int, max_size: int, budget: int) -> tuple[int, ...]:
    """Lengths of 1 to MAX_LENGTH, of a shape that matters to a bucketing sampler; their count
    is the dataset's size.

    The list's own size is N, rather than a list of exactly N drawn after N: there, shrinking N
    shifted every later draw, so a counterexample stayed at the size it was found at (N = 151
    where 4 items show the bug). Here deleting one item is one step of the shrinker."""
    shape = draw(st.sampled_from(["equal", "uniform", "skewed", "few huge", "over budget"]), label="lengths")

    def sized(lengths: st.SearchStrategy[int]) -> st.SearchStrategy[list[int]]:
        return st.lists(lengths, min_size=min_size, max_size=max_size)

    if shape == "equal":
        length = draw(st.integers(1, MAX_LENGTH), label="length")
        return tuple(draw(sized(st.just(length)), label="equal lengths"))
    if shape == "uniform":
        return tuple(draw(sized(st.integers(1, 100)), label="uniform lengths"))
    short = st.integers(1, 20)
    if shape == "skewed":  # most items short, about one in ten long
        long = st.integers(200, MAX_LENGTH)
        return tuple(draw(sized(st.one_of(*[short] * 9, long)), label="skewed lengths"))
    lengths = draw(sized(short), label="short lengths")
    if shape == "few huge":  # within the budget, but most of it
        big = st.integers(max(1, budget // 2), max(1, budget))
    else:  # longer than the whole budget: the rule is that such an item is yielded alone
        big = st.integers(budget + 1, budget + MAX_LENGTH)
    # One to three of them, at places taken modulo N so that they survive the shrinking of N.
    huge = draw(st.lists(st.tuples(st.integers(0, max_size), big), min_size=1, max_size=3), label="huge items")
    for place, length in huge if lengths else ():
        lengths[place % len(lengths)] = length
    return tuple(lengths)


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
    seed = data.draw(st.one_of(st.sampled_from([0, 1, SEED_LIMIT - 1]), st.integers(0, SEED_LIMIT - 1)), label="seed")
    seed = seed if plug.supports("seed") else 0
    if contract.parameter == "sample_rate":
        size = data.draw(st.integers(min_dataset_size, max_dataset_size), label="N (dataset size)")
        rate = data.draw(st.sampled_from(SAMPLE_RATES), label="sample_rate")
        return BatchCase(dataset_size=size, world_size=world_size, seed=seed, lengths=(1,) * size, sample_rate=rate)
    budget = data.draw(st.integers(1, 4 * MAX_LENGTH), label="max_tokens")
    lengths = data.draw(length_lists(min_dataset_size, max_dataset_size, budget), label="lengths")
    return BatchCase(dataset_size=len(lengths), world_size=world_size, seed=seed, lengths=lengths, max_tokens=budget)


def comparable(case: BatchCase) -> bool:
    """Whether two conforming plans of ``case`` differ but by a negligible chance: enough items,
    and, for a budget, enough of them that each rank gets several batches."""
    if case.dataset_size < MIN_COMPARED_ITEMS:
        return False
    if case.sample_rate:  # at rate 1 every step draws the whole shard: nothing random to compare
        return case.sample_rate < 1
    spread = sum(min(length, case.max_tokens) for length in case.lengths)
    return spread >= MIN_COMPARED_BATCHES_PER_RANK * case.world_size * case.max_tokens
