"""Hypothesis strategies for weighted cases: weights (equal, skewed, with zeros and ties, one
heavy item), world sizes, draws per rank, seeds and epochs. Every draw is labelled."""

from __future__ import annotations

from hypothesis import strategies as st

from .case import MAX_SIMULATED_WORLD_SIZE, WeightedCase
from .chance import draws_to_tell_apart
from .contracts import WeightedContract
from .plug import WeightedPlug

MAX_DATASET_SIZE = 100  # the frequency test's power is stated up to here (docs/statistical-invariants.md)
# All ranks' draws of one epoch, together, in a frequency test: enough to catch one weight
# of 100 doubled with probability 0.999 at the certification's budget (docs/statistical-invariants.md).
FREQUENCY_DRAWS = 16384
MAX_NUM_SAMPLES = 64
SEED_LIMIT = 2**32


def epochs() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.integers(0, 2**31 - 1))


@st.composite
def weight_vectors(draw: st.DrawFn, size: int, zeros: bool = True) -> tuple[float, ...]:
    """``size`` weights, at least one positive: equal, small integers (ties), spread over
    orders of magnitude, or one heavy item; some set to 0 when ``zeros``."""
    shape = draw(st.sampled_from(["equal", "integers", "spread", "one heavy"]), label="weights")
    if shape == "equal":
        weights = [1.0] * size
    elif shape == "integers":
        weights = [float(w) for w in draw(st.lists(st.integers(1, 5), min_size=size, max_size=size), label="ints")]
    elif shape == "spread":
        exponents = draw(st.lists(st.integers(-3, 3), min_size=size, max_size=size), label="powers of 10")
        weights = [10.0**e for e in exponents]
    else:
        heavy = draw(st.integers(0, size - 1), label="heavy item")
        weights = [100.0 if i == heavy else 1.0 for i in range(size)]
    if zeros and size > 1:
        zeroed = draw(st.sets(st.integers(0, size - 1), max_size=size - 1), label="weights set to 0")
        weights = [0.0 if i in zeroed else w for i, w in enumerate(weights)]
    return tuple(weights)


def draw_weighted_case(
    data: st.DataObject,
    plug: WeightedPlug,
    contract: WeightedContract,
    *,
    world_size: int | None = None,
    min_dataset_size: int = 1,
    max_dataset_size: int = MAX_DATASET_SIZE,
    num_samples: int | None = None,
    zeros: bool = True,
) -> WeightedCase:
    """Draw one case for ``plug``; a value given fixes that field. Without replacement, all
    ranks draw at most the items of positive weight between them: num_samples is cut to that."""
    if world_size is None:
        world_size = data.draw(st.integers(1, MAX_SIMULATED_WORLD_SIZE), label="W (world size)")
    size = data.draw(st.integers(min_dataset_size, max_dataset_size), label="N (dataset size)")
    weights = data.draw(weight_vectors(size, zeros), label="weights")
    most = MAX_NUM_SAMPLES
    if not contract.replacement:
        most = min(most, sum(w > 0 for w in weights) // world_size)
    if num_samples is None:
        num_samples = data.draw(st.integers(min(1, most), most), label="num_samples (per rank)")
    elif not contract.replacement:
        num_samples = min(num_samples, most)
    seed = data.draw(st.one_of(st.sampled_from([0, 1, SEED_LIMIT - 1]), st.integers(0, SEED_LIMIT - 1)), label="seed")
    return WeightedCase(
        dataset_size=size,
        world_size=world_size,
        seed=seed if plug.supports("seed") else 0,
        weights=weights,
        num_samples=num_samples,
    )


# Streams compared for a difference are at least long enough to tell two apart, and at most
# this: a case whose weights need more (nearly all weight on one item) is not judged.
MAX_COMPARED_DRAWS = 4096


def draw_comparable_case(
    data: st.DataObject, plug: WeightedPlug, contract: WeightedContract, **fixed
) -> WeightedCase | None:
    """A case whose streams are long enough that every pair of ranks, or every rank in two
    readings, differ but by a chance below SAME_BY_CHANCE (``chance``); None when its weights
    would need more than MAX_COMPARED_DRAWS, or more than the items there are to draw without
    replacement (not judged)."""
    case = draw_weighted_case(data, plug, contract, min_dataset_size=2, **fixed)
    most = MAX_COMPARED_DRAWS if contract.replacement else case.positive_items // case.world_size
    needed = draws_to_tell_apart(case, contract, most)
    if needed is None:
        return None
    return case.with_(num_samples=max(case.num_samples, needed))
