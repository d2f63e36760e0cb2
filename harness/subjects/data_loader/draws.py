"""Hypothesis strategies for data loader cases: instances, DP sizes, global batches, seeds and
epochs. Every draw is labelled."""

from __future__ import annotations

from hypothesis import strategies as st

from .case import ELASTIC_WORLD_SIZES, LoaderCase
from .plug import LoaderPlug

MAX_DATASET_SIZE = 200
MAX_SIMULATED_WORLD_SIZE = 8
# Each rank's batch holds 1 to this many instances.
MAX_RANK_BATCH = 8
SEED_LIMIT = 2**32
# Epochs compared for a difference hold at least this many whole global batches: two shuffled
# orders of them are then equal by chance with a probability too small to matter.
MIN_COMPARED_BATCHES = 4
# Loader workers per rank, where the factory takes num_workers; on simulated ranks, at most
# this many on all ranks of a case together (workers start each epoch, about 0.1 s a rank's
# epoch on 2 cores, and simulated ranks start theirs in turn).
MAX_WORKERS = 2
MAX_CASE_WORKERS = 2


def epochs() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 10), st.integers(0, 2**31 - 1))


def draw_loader_case(
    data: st.DataObject,
    plug: LoaderPlug,
    *,
    world_size: int | None = None,
    batch_multiple_of: int | None = None,
    min_dataset_size: int = 0,
    max_dataset_size: int = MAX_DATASET_SIZE,
    min_global_batches: int = 0,
    with_workers: bool = True,
) -> LoaderCase:
    """Draw one case for ``plug``; a value given fixes that field. The global batch is a
    multiple of ``batch_multiple_of`` (default: the world size); ``min_global_batches`` whole
    global batches at least; ``num_workers`` drawn first, where the factory takes it and
    ``with_workers`` (0 otherwise), so that a simulated case with workers draws few ranks."""
    workers = 0
    if with_workers and plug.supports("num_workers"):
        workers = data.draw(st.integers(0, MAX_WORKERS), label="num_workers")
    if world_size is None:
        most_ranks = MAX_CASE_WORKERS // workers if workers else MAX_SIMULATED_WORLD_SIZE
        world_size = data.draw(st.integers(1, most_ranks), label="W (DP world size)")
    multiple = batch_multiple_of or world_size
    per = data.draw(st.integers(1, MAX_RANK_BATCH), label="global batch / multiple")
    global_batch = per * multiple
    least = max(min_dataset_size, min_global_batches * global_batch)
    size = data.draw(st.integers(least, max(least, max_dataset_size)), label="N (dataset size)")
    seed = data.draw(st.one_of(st.sampled_from([0, 1, SEED_LIMIT - 1]), st.integers(0, SEED_LIMIT - 1)), label="seed")
    seed = seed if plug.supports("seed") else 0
    return LoaderCase(
        dataset_size=size, world_size=world_size, seed=seed, global_batch_size=global_batch, num_workers=workers
    )


def checkpoint_at(data: st.DataObject, batches: int) -> int:
    """k, the batches read before the checkpoint: 0 and the epoch's last batch weighted."""
    return data.draw(
        st.one_of(st.sampled_from([0, batches]), st.integers(0, batches)), label="k (batches before the checkpoint)"
    )


def saved_and_resumed_on(data: st.DataObject) -> tuple[int, int]:
    """W1, the DP size a checkpoint is taken at, and W2, another it is resumed on."""
    pairs = [(w1, w2) for w1 in ELASTIC_WORLD_SIZES for w2 in ELASTIC_WORLD_SIZES if w1 != w2]
    return data.draw(st.sampled_from(pairs), label="W1, W2 (DP sizes checkpointed at, resumed on)")
