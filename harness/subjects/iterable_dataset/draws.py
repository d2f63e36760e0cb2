"""Hypothesis strategies for streaming cases: the data's layout in shards, the ranks, the
DataLoader's workers and batches, seeds and epochs.

Shard counts are drawn below, equal to, not divisible by and above ranks x workers, with
empty and uneven shards; every draw is labelled, so a falsifying example reads
"Draw 3 (num_shards): 5".
"""

from __future__ import annotations

from hypothesis import strategies as st

from sampler_conformance.core.counting import batch_count
from sampler_conformance.execution.scenario import Ranks

from .case import SEED_LIMIT, StreamCase
from .contracts import StreamContract
from .plug import StreamPlug

MAX_DATASET_SIZE = 400
# Real loaders in real groups read every batch with an all-reduce: N kept where that is quick.
MAX_GROUP_DATASET_SIZE = 120
EDGE_SIZE = 8  # stream_runs draws datasets this small: one item, fewer items than workers, none
MAX_SIMULATED_WORLD_SIZE = 8
MAX_WORKERS = 3
MAX_BATCH_SIZE = 8
MAX_SHARDS = 24
MAX_SOURCES = 4  # a mix's sources
# The items of a mix whose sources' frequencies are tested (in-process only): enough draws to
# see a light source drawn at half its weight (docs/streaming-datasets.md, "Mixing sources").
MIX_FREQUENCY_ITEMS = 1600
# A mix's weights: equal, unequal, far apart, and none at all (a source of weight 0 is never read).
SOURCE_WEIGHTS = (0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 10.0)


MAX_EPOCH = 2**31 - 1


def most_items(ranks: Ranks) -> int:
    """The largest N drawn for a case read on ``ranks``: real groups read through real loaders."""
    return MAX_DATASET_SIZE if ranks.world_size is None else MAX_GROUP_DATASET_SIZE


def epochs() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.integers(0, MAX_EPOCH))


def consecutive_epochs(count: int) -> st.SearchStrategy[list[int]]:
    """``count`` consecutive epochs from a drawn first one, as a training loop reads them. One
    value to shrink, where ``count`` independent epochs shrink one at a time, and in a real
    group each of those steps reads every epoch again, through fresh loader workers: shrinking
    one known-bad's five epochs took 81 readings and 25 s. Not for what only epochs apart
    show: a copy that counts its own epochs on from the first follows consecutive ones."""
    return epochs().map(lambda first: [min(first, MAX_EPOCH + 1 - count) + k for k in range(count)])


def other_num_workers(num_workers: int, least: int) -> st.SearchStrategy[int]:
    """A number of workers from ``least`` to MAX_WORKERS other than ``num_workers``."""
    return st.sampled_from([k for k in range(least, MAX_WORKERS + 1) if k != num_workers])


def shard_counts(streams: int) -> st.SearchStrategy[int]:
    """Around ``streams`` (ranks x workers): one, fewer, exactly as many, one more, a multiple, any."""
    edges = sorted({1, max(streams - 1, 1), streams, streams + 1, 2 * streams, 3 * streams + 1})
    return st.one_of(st.sampled_from([n for n in edges if n <= MAX_SHARDS]), st.integers(1, MAX_SHARDS))


@st.composite
def shard_layouts(draw: st.DrawFn, dataset_size: int, streams: int, fed: bool = False) -> tuple[int, ...]:
    """Shard sizes summing to ``dataset_size``: even (as ``numpy.array_split`` cuts), or drawn
    cut points (uneven, some shards empty). ``fed``: at least ``streams`` shards, none empty
    (the caller draws ``dataset_size >= streams``)."""
    count = draw(shard_counts(streams), label="num_shards")
    least = 1 if fed else 0
    if fed:
        count = min(max(count, streams), dataset_size)
    if draw(st.booleans(), label="uneven shards"):
        spare = dataset_size - count * least
        cuts = sorted(draw(st.lists(st.integers(0, spare), min_size=count - 1, max_size=count - 1), label="cuts"))
        bounds = [0, *cuts, spare]
        return tuple(least + b - a for a, b in zip(bounds, bounds[1:], strict=False))
    base, extra = divmod(dataset_size, count)
    return tuple(base + (k < extra) for k in range(count))


@st.composite
def mixes(
    draw: st.DrawFn, dataset_size: int, streams: int, fed: bool = False, even: bool = False, sized: bool = False
) -> tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...]]:
    """A mix's sources (2 to MAX_SOURCES, consecutive) and their weights, at least one above 0,
    as (source sizes, weights, shard sizes): each source is cut into shards of its own
    (``shard_layouts``), and holds an item unless there are fewer items than sources. ``fed``:
    each source at least ``streams`` items (the caller draws enough), so every (rank, worker)
    pair has a share of each to start from. ``sized``: sources of sizes in proportion to their
    weights, so that every pair reads most of its shares before one runs out; ``even``: and
    of equal weights."""
    count = draw(st.integers(2, MAX_SOURCES), label="sources")
    if even:
        weights = [1.0] * count
    else:
        weights = draw(
            st.lists(st.sampled_from(SOURCE_WEIGHTS), min_size=count, max_size=count).filter(any), label="weights"
        )
    if even or sized:
        lightest = min(w for w in weights if w > 0)
        shares = [w or lightest for w in weights]  # a source of weight 0 holds items too: it must not be read
        ends = [round(dataset_size * sum(shares[: k + 1]) / sum(shares)) for k in range(count)]
        sizes = tuple(b - a for a, b in zip([0, *ends], ends, strict=False))
    else:
        # No source empty but where there are fewer items than sources (stream_runs' edge sizes):
        # a real mix's sources hold data, and some libraries cannot build an empty one.
        least = streams if fed else int(dataset_size >= count)
        spare = dataset_size - count * least
        cuts = sorted(
            draw(st.lists(st.integers(0, spare), min_size=count - 1, max_size=count - 1), label="source cuts")
        )
        bounds = [0, *cuts, spare]
        sizes = tuple(least + b - a for a, b in zip(bounds, bounds[1:], strict=False))
    shards = tuple(size for source in sizes for size in draw(shard_layouts(source, streams, fed=fed)))
    return sizes, tuple(weights), shards


def draw_stream_case(
    data: st.DataObject,
    plug: StreamPlug,
    contract: StreamContract,
    *,
    world_size: int | None = None,
    num_workers: int | None = None,
    persistent_workers: bool = False,
    shuffle: bool | None = None,
    min_dataset_size: int = 0,
    max_dataset_size: int = MAX_DATASET_SIZE,
    divisible: bool = False,
    fed: bool = False,
    even_mix: bool = False,
    sized_mix: bool = False,
) -> StreamCase:
    """Draw one case for ``plug``. ``None`` draws a field; a value fixes it (a real process
    group has the size it has). Options the factory lacks keep their defaults.

    ``divisible``: N a multiple of W x workers x batch_size, so the data fills every batch of
    every (rank, worker) pair. ``fed``: at least one non-empty shard and one batch's worth of
    items per pair (a dataset that deals whole batches to the workers, as mosaicml-streaming
    does, rightly leaves a worker idle when there are fewer batches than workers). A contract
    that mixes sources draws them (``mixes``) and their weights; ``sized_mix``, of sizes in
    proportion to their weights, ``even_mix``, of equal sizes and weights."""
    if world_size is None:
        world_size = data.draw(st.integers(1, MAX_SIMULATED_WORLD_SIZE), label="W (world size)")
    if num_workers is None:
        num_workers = data.draw(st.integers(0, MAX_WORKERS), label="num_workers")
    streams = world_size * max(num_workers, 1)
    # Fed cases look for idle workers, which a split of whole items leaves most often with batches of one.
    batches = st.one_of(st.just(1), st.integers(1, MAX_BATCH_SIZE)) if fed else st.integers(1, MAX_BATCH_SIZE)
    batch_size = data.draw(batches, label="batch_size")
    if divisible:
        unit = streams * batch_size
        size = unit * data.draw(st.integers(0, max(max_dataset_size // unit, 1)), label="N / (W x workers x batch)")
    else:
        least = max(min_dataset_size, streams * batch_size if fed else 0)
        if fed and contract.mixes:
            least = max(least, MAX_SOURCES * streams)
        most = max(max_dataset_size, least)
        edges = [
            n for n in (0, 1, streams - 1, streams, streams + 1, 2 * streams, 4 * streams + 3) if least <= n <= most
        ]
        size = data.draw(
            st.one_of(st.sampled_from(edges or [least]), st.integers(least, most)), label="N (dataset size)"
        )
    sources: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    if contract.mixes:
        sources, weights, layout = data.draw(
            mixes(size, streams, fed=fed, even=even_mix, sized=sized_mix), label="sources, weights, shard sizes"
        )
    else:
        layout = data.draw(shard_layouts(size, streams, fed=fed), label="shard sizes")
    if shuffle is None:
        shuffle = data.draw(st.booleans(), label="shuffle") if plug.supports("shuffle") else False
    seed = data.draw(st.one_of(st.sampled_from([0, 1, SEED_LIMIT - 1]), st.integers(0, SEED_LIMIT - 1)), label="seed")
    return StreamCase(
        dataset_size=size,
        world_size=world_size,
        shuffle=shuffle,
        seed=seed if plug.supports("seed") else 0,
        drop_last=False,  # the DataLoader's drop_last drops data the dataset was asked for: not drawn
        batch_size=batch_size,
        shard_sizes=layout,
        num_workers=num_workers,
        persistent_workers=persistent_workers,
        source_sizes=sources,
        weights=weights,
    )


def most_batches(case: StreamCase) -> int:
    """Batches the longest rank yields in an epoch when the ranks' shares differ by at most one
    item and its workers' by one (a contract that deals whole shards may yield more)."""
    per_worker = batch_count(batch_count(case.dataset_size, case.world_size), case.workers)
    return case.workers * batch_count(per_worker, case.batch_size)


def checkpoints(case: StreamCase, at_epoch_end: bool = False) -> st.SearchStrategy[int | None]:
    """Batches a rank takes before a checkpoint: half the time an edge (none; all, after the
    last batch with the epoch not yet ended; and with ``at_epoch_end``, ``None``: once the
    epoch has ended), half the time strictly between, where a resume has both a past and a
    rest to get right. (Drawn from 0 to all, the between was a third of the draws where an
    epoch holds two batches: datasets' resume, which loses its shuffle buffer, went unseen in
    the 7 examples a group test draws.)"""
    most = most_batches(case)
    edges: list[int | None] = [0, most, None] if at_epoch_end else [0, most]
    between = st.integers(1, most - 1) if most >= 2 else st.sampled_from(edges)
    return st.one_of(st.sampled_from(edges), between)
