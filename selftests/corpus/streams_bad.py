"""Known-bad streaming datasets: each is the reference (``adapters/torch_iterable.py``,
``RankWorkerSplit``) with one bug a real project shipped, named in its docstring.

Each is its own factory, called as ``Attr(dataset_size, rank=r, world_size=W, ...)``;
``selftests/test_streams.py`` certifies each and asserts the exact set of failed invariants
its ``@rejected(...)`` declares.
"""

from __future__ import annotations

import random
from itertools import islice
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import get_worker_info

from sampler_conformance.adapters.torch_iterable import PaddedRankWorkerSplit, RankWorkerSplit, WeightedMix, cycled

from .rejections import rejected

SHUFFLED_APART = "each rank and each worker shuffles on its own, so their parts of the data overlap and miss items"


@rejected("test_stream_runs", "stream_runs", crashes=True, under="stream")
class RefusesEmpty(RankWorkerSplit):
    """Refuses an empty dataset in its constructor, as the PyTorch docs' IterableDataset
    example does (``assert end > start``): a rank, or a whole job, given nothing crashes."""

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        assert dataset_size > 0, "this example only works with end >= start"
        super().__init__(dataset_size, rank, world_size, seed, shuffle)


@rejected("test_stream_epoch", "item_ids", under="stream")
class FloatIds(RankWorkerSplit):
    """Yields each id as a float, as a dataset that returns ``float(index)`` or a float tensor."""

    def __iter__(self):
        return (float(i) for i in super().__iter__())


@rejected("test_stream_epoch", "item_ids", under="stream")
class StringIds(RankWorkerSplit):
    """Yields each id as a string ("17"), as a dataset that reads its ids from file names or
    text records and never converts them: no item has an id the suite can read, so the only
    cases without a fault are empty ones, where nothing can be judged."""

    def __iter__(self):
        return (str(i) for i in super().__iter__())


@rejected(
    "test_stream_epoch",
    "no_foreign_items",
    {"exactly_once": "id 0 is never yielded, and N is yielded instead"},
    under="stream",
)
class OffByOne(RankWorkerSplit):
    """Yields ids 1 .. N for 0 .. N-1: a range off by one."""

    def __iter__(self):
        return (i + 1 for i in super().__iter__())


@rejected("test_stream_epoch", "exactly_once", under="stream")
class NoWorkerSplit(RankWorkerSplit):
    """Splits across ranks but not across workers, so each of a rank's workers yields the
    rank's whole part (pytorch/pytorch #30599, huggingface/datasets #3423)."""

    def worker(self) -> tuple[int, int]:
        return 0, 1


class _WithShards(RankWorkerSplit):
    """The reference, also given the layout's shards (the factory's ``shards``)."""

    def __init__(
        self,
        dataset_size: int,
        *,
        rank: int,
        world_size: int,
        shards: tuple[range, ...],
        seed: int = 0,
        shuffle: bool = False,
    ) -> None:
        super().__init__(dataset_size, rank, world_size, seed, shuffle)
        self.shards = shards


@rejected("test_even_batches", "even_batches", under="stream")
class ShardsPerRank(_WithShards):
    """Deals whole shards to ranks and workers in turn (in an order shuffled per epoch, as
    webdataset's ``detshuffle`` and ``split_by_node`` do): every item once, but the ranks'
    counts follow their shards' sizes (pytorch/pytorch #141069)."""

    def __iter__(self):
        worker, workers = self.worker()
        part, parts = self.rank * workers + worker, self.world_size * workers
        shards = list(self.shards)
        if self.shuffle:  # the shard order of the epoch, as webdataset's detshuffle draws it
            order = torch.randperm(len(shards), generator=torch.Generator().manual_seed(self.seed + self.epoch))
            shards = [shards[k] for k in order.tolist()]
        mine = {i for shard in shards[part::parts] for i in shard}
        return (i for i in self.order() if i in mine)  # its items in the epoch's order, as a shuffle buffer mixes them


@rejected("test_no_starved_worker", "no_starved_worker", under="stream")
class CollapsedShards(RankWorkerSplit):
    """Splits across ranks by items, then across workers by shards, but holds the rank's part
    as one shard, so worker 0 reads it all and the others nothing (huggingface/datasets
    #8669: after ``shuffle()`` the dataset reports one shard)."""

    def __iter__(self):
        info = get_worker_info()
        workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        rank_part = self.order()[self.rank :: self.world_size]
        shards = [rank_part]  # one shard, dealt to the workers in turn
        return (i for shard in shards[worker::workers] for i in shard)


@rejected(
    "test_stream_deterministic",
    "stream_deterministic",
    {"exactly_once": SHUFFLED_APART},
    under="stream",
)
class UnseededShuffle(RankWorkerSplit):
    """Shuffles with a generator it never seeds, before splitting (webdataset #233: a
    ``shuffle()`` before ``split_by_node`` assigns shards differently on each rank)."""

    def order(self) -> list[int]:
        order = list(range(self.dataset_size))
        random.Random().shuffle(order)
        return order


@rejected(
    "test_stream_agrees_across_processes",
    "stream_agrees",
    {"exactly_once": "each rank's process shuffles with its own hash seed, so the ranks' parts overlap"},
    under="stream",
    whole_suite=True,
)
class HashSeeded(RankWorkerSplit):
    """Seeds its shuffle with ``hash()`` of a string, which each Python process salts
    differently (PYTHONHASHSEED): one process agrees with itself, two ranks do not."""

    def order(self) -> list[int]:
        order = list(range(self.dataset_size))
        random.Random(hash(f"seed {self.seed} epoch {self.epoch}")).shuffle(order)
        return order


@rejected("test_stream_reshuffles", "stream_reshuffles", under="stream")
class EpochIgnored(RankWorkerSplit):
    """Has set_epoch, but shuffles with the seed alone (webdataset #172: the epoch "is never
    incrementing")."""

    def order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.dataset_size))
        return torch.randperm(self.dataset_size, generator=torch.Generator().manual_seed(self.seed)).tolist()


@rejected("test_stream_seed_effective", "stream_seed_effective", under="stream")
class SeedIgnored(RankWorkerSplit):
    """Shuffles with the epoch alone (accelerate's ``IterableDatasetShard`` reseeds its
    dataset's generator with ``manual_seed(self.epoch)``): every run, whatever its seed, reads
    the same orders."""

    def order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.dataset_size))
        return torch.randperm(self.dataset_size, generator=torch.Generator().manual_seed(self.epoch)).tolist()


@rejected("test_stream_runs", "stream_runs", crashes=True, under="stream")
class NeedsSetEpoch(RankWorkerSplit):
    """Has no epoch until ``set_epoch`` gives it one (accelerate's ``IterableDatasetShard``
    reads ``self.epoch``, which only ``set_epoch`` sets): read without it, as an evaluation
    loop or a script that never calls it reads, it raises AttributeError."""

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        super().__init__(dataset_size, rank, world_size, seed, shuffle)
        self._epoch[0] = -1  # no epoch yet

    @property
    def epoch(self) -> int:
        if int(self._epoch[0]) < 0:
            raise AttributeError("'NeedsSetEpoch' object has no attribute 'epoch' (call set_epoch first)")
        return int(self._epoch[0])


# Its order repeats only through workers, which the in-process loader copies it for as real ones do.
@rejected("test_stream_reshuffles", "stream_reshuffles", under="stream")
class GeneratorAdvancedInIter(RankWorkerSplit):
    """Shuffles with a generator made in ``__init__`` from the seed and advanced in each
    ``__iter__``, whatever the epoch: without workers the main process's dataset moves on, and
    every epoch has a new order; through DataLoader workers the main process never iterates
    it, each fresh worker copies it as it was built, and every epoch repeats the first
    (climate-learn's ShardDataset moved its epoch on in ``__iter__``, so only the workers'
    copies saw it: aditya-grover/climate-learn #89)."""

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        super().__init__(dataset_size, rank, world_size, seed, shuffle)
        self.generator = np.random.default_rng(seed)
        self._order = list(range(dataset_size))

    def order(self) -> list[int]:
        return self._order

    def __iter__(self):
        if self.shuffle:
            self._order = self.generator.permutation(self.dataset_size).tolist()
        return super().__iter__()


class _FromGroup:
    """Takes its rank from the process group, whatever it is told, as mosaicml-streaming takes
    it from the node: judged in real groups only (``needs_process_group``), where what the
    in-process tests judge is read again without workers."""

    needs_process_group = True

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        super().__init__(dataset_size, dist.get_rank(), dist.get_world_size(), seed, shuffle)  # type: ignore[call-arg]


# Datasets that take their rank from the group: only real groups can judge them.
@rejected(
    "test_stream_deterministic",
    "stream_deterministic",
    {
        "exactly_once": SHUFFLED_APART,
        "epoch_reaches_workers": "every worker shuffles afresh, so fresh and persistent workers read different streams",
    },
    under="stream",
    whole_suite=True,
)
class UnseededShuffleFromGroup(_FromGroup, UnseededShuffle):
    """UnseededShuffle, taking its rank from the process group."""


@rejected("test_stream_reshuffles", "stream_reshuffles", under="stream", whole_suite=True)
class EpochIgnoredFromGroup(_FromGroup, EpochIgnored):
    """EpochIgnored, taking its rank from the process group."""


@rejected(
    "test_epoch_reaches_persistent_workers",
    "epoch_reaches_workers",
    under="stream",
    whole_suite=True,
)
class EpochInAttribute(RankWorkerSplit):
    """Keeps the epoch in a plain attribute of the main process's copy: fresh workers get the
    new value with their copy, persistent workers keep the one they started with
    (huggingface/datasets #6673, fixed in #6710 by keeping it in shared memory)."""

    plain_epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.plain_epoch = epoch

    @property
    def epoch(self) -> int:
        return self.plain_epoch


@rejected(
    "test_epoch_reaches_persistent_workers",
    "epoch_reaches_workers",
    under="stream",
    whole_suite=True,
)
class EpochCountedByCopies(EpochInAttribute):
    """``set_epoch`` sets the epoch of the main process's copy, and every copy counts its own
    epochs on from it, one more each time it runs out, as litdata's ``StreamingDataset``
    does (``current_epoch += 1``). Persistent workers follow ``set_epoch`` only while the
    epochs come one after another."""

    def __iter__(self):
        yield from super().__iter__()
        self.plain_epoch += 1


class _WholeShardsPerRank(_WithShards):
    """Whole shards to each rank in turn, its items in the epoch's order, before its workers split them."""

    def ranks_items(self, order: list[int]) -> list[list[int]]:
        position = {item: k for k, item in enumerate(order)}
        return [
            sorted((i for shard in self.shards[r :: self.world_size] for i in shard), key=position.__getitem__)
            for r in range(self.world_size)
        ]


@rejected("test_stream_epoch", "padded_once", under="stream_padded")
class PadsShortRanks(_WholeShardsPerRank):
    """Deals whole shards to the ranks, then repeats each short rank's items until it has as
    many as the longest rank (or the dataset's first items, when it has none), as a loop that
    cycles each rank's shards to equal length does: equal counts, but one shard's worth of
    repeats where fewer than W x workers would do."""

    def rank_items(self, order: list[int]) -> list[int]:
        ranks = self.ranks_items(order)
        longest = max(len(items) for items in ranks)
        mine = ranks[self.rank] or order
        return cycled(mine, longest)


@rejected(
    "test_stream_epoch",
    "truncated_once",
    under="stream_truncated",
)
class TruncatesToShortestRank(_WholeShardsPerRank):
    """Deals whole shards to the ranks, then cuts every rank to the shortest rank's count
    (ray-project/ray #63285: ``streaming_split(equal=True)`` silently drops rows): equal
    counts, but up to a shard's worth of items dropped where fewer than W x workers would do."""

    def rank_items(self, order: list[int]) -> list[int]:
        ranks = self.ranks_items(order)
        return ranks[self.rank][: min(len(items) for items in ranks)]


@rejected(
    "test_same_items_any_workers",
    "same_items_any_workers",
    under="stream_padded",
)
class PadsPerWorker(PaddedRankWorkerSplit):
    """Pads each (rank, worker) part rather than each rank: the epoch's order, repeated from its
    start, cut into W x workers parts of ceil(N / (W x workers)) items. Bounded, equal, but
    how many items repeat, and which, changes with num_workers: evaluating with 2 workers or
    with 3 counts different samples twice."""

    def rank_items(self, order: list[int]) -> list[int]:
        worker, workers = self.worker()
        parts = self.world_size * workers
        per_part = -(-len(order) // parts)
        return cycled(order, per_part * parts)[self.rank * workers * per_part : (self.rank + 1) * workers * per_part]


@rejected(
    "test_stream_resume_continues",
    "stream_resume_continues",
    {"stream_resumes_compose": "its first resume already restarts the epoch, so a second one does too"},
    under="stream+resumable",
    whole_suite=True,
)
class IgnoresLoadedState(RankWorkerSplit):
    """Takes a state in ``load_state_dict`` but reads its stream from the start regardless,
    as a dataset that restores its position only when it is built (mosaicml/streaming #437:
    it "restarts from scratch despite load_state_dict"): a resumed run trains again on what
    it had trained on."""

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.restored = dict(state)  # kept, never read


@rejected("test_stream_resumes_compose", "stream_resumes_compose", under="stream+resumable", whole_suite=True)
class StaleStateAfterResume(RankWorkerSplit):
    """Resumes right once, but the position it reports after a resume is a fresh zero that
    never advances, as datasets 5.0's ``load_state_dict`` rebound the live state
    (pytorch/torchtitan #3907, huggingface/datasets #8308): every checkpoint of the resumed
    run is stale, and the second resume restarts the stream from its beginning."""

    def __iter__(self):
        loaded = self._loaded
        if loaded is None or loaded["epoch"] != self.epoch:
            return super().__iter__()
        self._loaded = None
        self._position = {"epoch": self.epoch, "yielded": 0}  # reported from now on; the resume reads on elsewhere
        return islice(self.reader_items(), loaded["yielded"], None)


@rejected(
    "test_stream_epoch_after_resume",
    "stream_epoch_after_resume",
    sometimes={
        "stream_resumes_compose": "checkpointed at an epoch's end, it carries the offset into the next epoch, "
        "whose own checkpoint then holds it, so a second resume loses that epoch's start"
    },
    under="stream+resumable",
    whole_suite=True,
)
class OffsetOutlivesEpoch(RankWorkerSplit):
    """Keeps the offset of the state it resumed from and skips it at the start of every
    iteration, whatever the epoch (huggingface/datasets #7447: after a mid-epoch resume,
    every later epoch iterates only the batches that were left; meta-pytorch/data #1437: a
    state taken at an epoch's end empties the next one)."""

    offset = 0

    def load_state_dict(self, state: dict[str, int]) -> None:
        super().load_state_dict(state)
        self.offset = int(state["yielded"])

    def __iter__(self):
        self._loaded = None
        position = self._position = {"epoch": self.epoch, "yielded": self.offset}
        for item in islice(self.reader_items(), self.offset, None):
            position["yielded"] += 1
            yield item


@rejected("test_stream_plain_state", "stream_plain_state", under="stream+resumable", whole_suite=True)
class NumpyPosition(RankWorkerSplit):
    """Reports its position as numpy integers, as a dataset that computes it with numpy:
    ``torch.load(weights_only=True)``, the way trainers load checkpoints, refuses them."""

    def state_dict(self) -> dict[str, Any]:
        return {key: np.int64(value) for key, value in super().state_dict().items()}


MIX = "stream_mix"


@rejected("test_stream_epoch", "mix_read_once", under=MIX)
class MixUnsplit(WeightedMix):
    """Every pair reads each source whole: the mix built over sources that were never split
    across ranks and workers (huggingface/datasets #7868: split_dataset_by_node applied
    before interleave_datasets gave every rank the same items)."""

    def shares(self, epoch: int, pair: int, pairs: int) -> list[list[int]]:
        return super().shares(epoch, 0, 1)


@rejected("test_mix_frequencies", "mix_frequencies", under=MIX)
class MixIgnoresWeights(WeightedMix):
    """Draws every source alike, whatever its weight: the weights taken but never handed to
    the draw (a source of weight 0 is read as often as the others)."""

    def __init__(self, dataset_size: int, rank: int, world_size: int, sources, weights, seed=0, shuffle=False):
        super().__init__(dataset_size, rank, world_size, sources, (1.0,) * len(sources), seed, shuffle)


@rejected("test_mix_pairs_independent", "mix_pairs_independent", under=MIX)
class MixSameEverywhere(WeightedMix):
    """Seeds its draws of sources with the seed and the epoch alone, the same in every rank and
    worker (huggingface/datasets #7567: "the same dataset sampling order across all
    workers"): every pair draws the same sources in the same order."""

    def generator(self, epoch: int, pair: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, epoch])
