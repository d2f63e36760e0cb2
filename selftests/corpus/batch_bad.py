"""Known-bad batch samplers: each is a reference (``adapters/budget_batches.py``) with one bug
a real project shipped, named in its docstring.

Each is called as ``Attr(lengths, num_replicas=W, rank=r, max_tokens=b, seed=s)`` (the
micro-batch one with ``batch_size=k``, the Poisson ones with ``sample_rate=q`` instead of
``max_tokens``); ``selftests/test_batches.py`` certifies each and asserts the exact set of
failed invariants its ``@rejected(...)`` declares.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from sampler_conformance.adapters.budget_batches import MicroBatchSampler, PoissonBatchSampler, TokenBudgetBatchSampler

from .rejections import AT_THE_EDGES, rejected

CACHED_PLAN = "each process plans its own batches, so in a job the ranks' parts overlap and leave items out"


@rejected("test_batches_run", "batches_run", crashes=True, under="dynamic_batches")
class RefusesLongItem(TokenBudgetBatchSampler):
    """Raises on an item longer than the budget instead of yielding it alone."""

    def plan(self) -> list[list[int]]:
        longest = max(self.lengths, default=0)
        if longest > self.max_tokens:
            raise ValueError(f"an item of length {longest} does not fit max_tokens={self.max_tokens}")
        return super().plan()


@rejected("test_batch_epoch", "batch_items", under="dynamic_batches")
class EmptyBucketFlushed(TokenBudgetBatchSampler):
    """Flushes its open batch when the epoch ends, even when it is empty: every rank's last
    batch is empty (``len()`` counts it too)."""

    def __iter__(self) -> Iterator[list[int]]:
        yield from super().__iter__()
        yield []

    def __len__(self) -> int:
        return super().__len__() + 1


@rejected("test_batch_epoch", "equal_batch_counts", under="dynamic_batches")
class UnevenRoundRobin(TokenBudgetBatchSampler):
    """Deals the global batches round robin and keeps the incomplete last round: with B
    batches on W ranks, the first B mod W ranks run one step more (lhotse-speech/lhotse #646)."""

    def plan(self) -> list[list[int]]:
        kept = self.num_replicas
        self.num_replicas = 1  # nothing dropped
        try:
            return super().plan()
        finally:
            self.num_replicas = kept

    def __len__(self) -> int:
        return len(self.plan()[self.rank :: self.num_replicas])


@rejected("test_batch_len_matches", "batch_len_matches", under="dynamic_batches")
class LenOfGlobalPlan(TokenBudgetBatchSampler):
    """``len()`` is the number of batches in the global plan, every rank's together
    (pytorch/audio #3068: ``len()`` disagreeing with what is yielded)."""

    def __len__(self) -> int:
        return len(self.plan())


@rejected("test_batch_len_matches", "batch_len_matches", under="dynamic_batches")
class LenOfPreviousPass(TokenBudgetBatchSampler):
    """Counts its batches as it yields them, and ``len()`` reports that count: 1 before the
    first pass, the previous pass's count after (funasr's buffered dynamic batch sampler). A
    training loop sizes its epoch from ``len()`` before the pass, so it plans the wrong steps."""

    def __init__(self, lengths, num_replicas, rank, max_tokens, seed=0) -> None:
        super().__init__(lengths, num_replicas, rank, max_tokens, seed)
        self.counted = 1

    def __iter__(self) -> Iterator[list[int]]:
        batches = list(super().__iter__())
        self.counted = len(batches)
        return iter(batches)

    def __len__(self) -> int:
        return self.counted


@rejected("test_batch_len_matches", "batch_len_matches", under="dynamic_batches")
class LenFrozenAtConstruction(TokenBudgetBatchSampler):
    """Counts its batches once, at construction, for the epoch it was built at, while the
    count depends on the epoch (pytorch/audio #3068: the count changes by epoch, "not
    reflected in ``__len__``"): from 65 items on, more than one bucketing window, another
    order packs into another number of batches. From the first ``set_epoch`` on, ``len()``
    may name a count the rank does not yield."""

    def __init__(self, lengths, num_replicas, rank, max_tokens, seed=0) -> None:
        super().__init__(lengths, num_replicas, rank, max_tokens, seed)
        self.frozen = len(self.plan()) // num_replicas

    def __len__(self) -> int:
        return self.frozen


@rejected(
    "test_batch_epoch",
    "each_item_once",
    {"batch_len_matches": "its __len__ raises: charged there, while the batches read are judged by the rest"},
    under="dynamic_batches",
)
class EveryRankWholePlanLenRaises(TokenBudgetBatchSampler):
    """Has no rank: every rank yields the whole plan, as a batch sampler written for one
    process does until a wrapper shards it; and its ``__len__`` raises unless it is told the
    number of steps (both as torch-geometric's ``DynamicBatchSampler``). Its batches must
    still be judged: the raising ``len()`` is the length invariant's alone."""

    def __iter__(self) -> Iterator[list[int]]:
        kept = self.num_replicas
        self.num_replicas = 1  # the whole plan, nothing dropped
        try:
            return iter(self.plan())
        finally:
            self.num_replicas = kept

    def __len__(self) -> int:
        raise ValueError("the length of this sampler is undefined: pass num_steps to give it one")


@rejected(
    "test_batches_deterministic",
    "batches_deterministic",
    sometimes={
        "batch_len_matches": "len() asked before a pass plans with the previous pass's offset, which may pack "
        "another number of batches than the pass yields"
    },
    under="dynamic_batches",
)
class GeneratorCarriedOver(TokenBudgetBatchSampler):
    """Makes its generator once, from the seed, and draws every epoch's order from it: each
    epoch differs, but epoch e's batches depend on how many epochs this sampler read before."""

    def __init__(self, lengths, num_replicas, rank, max_tokens, seed=0) -> None:
        super().__init__(lengths, num_replicas, rank, max_tokens, seed)
        self.generator = torch.Generator().manual_seed(seed)
        self.offset = 0

    def __iter__(self) -> Iterator[list[int]]:
        self.offset = int(torch.randint(0, 2**31, (1,), generator=self.generator))
        return super().__iter__()

    def plan(self) -> list[list[int]]:
        epoch = self.epoch
        self.epoch = epoch + self.offset
        try:
            return super().plan()
        finally:
            self.epoch = epoch


@rejected("test_batches_reshuffle", "batches_reshuffle", under="dynamic_batches")
class EpochIgnored(TokenBudgetBatchSampler):
    """``set_epoch`` stores the epoch, and the plan never reads it: every epoch the same batches."""

    def set_epoch(self, epoch: int) -> None:
        self.last_epoch = epoch


@rejected(
    "test_batch_plan_agrees_across_processes",
    "batch_plan_agrees",
    {
        "each_item_once": CACHED_PLAN,
        "batches_deterministic": "numpy's unseeded generator: the script run again (or the cache refilled by "
        "another case) plans other batches",
    },
    sometimes={"equal_batch_counts": "two processes' plans have as many batches only by chance"},
    under="dynamic_batches",
)
class PlanCachedPerProcess(TokenBudgetBatchSampler):
    """Builds the global plan once per process and epoch with numpy's global generator, which
    the OS seeds differently in every process, and caches it for the process's other samplers:
    ranks simulated in one process share the plan, ranks of a job each plan their own."""

    cache: dict[tuple[tuple[int, ...], int, int, int], list[list[int]]] = {}

    def plan(self) -> list[list[int]]:
        key = (tuple(self.lengths), self.max_tokens, self.num_replicas, self.epoch)
        if key not in self.cache:
            self.cache.clear()
            order = np.random.default_rng().permutation(len(self.lengths)).tolist()
            batches: list[list[int]] = []
            for index in order:
                if batches and sum(self.lengths[i] for i in batches[-1]) + self.lengths[index] <= self.max_tokens:
                    batches[-1].append(index)
                else:
                    batches.append([index])
            self.cache[key] = batches[: len(batches) - len(batches) % self.num_replicas]
        return self.cache[key]


@rejected(
    "test_batch_epoch",
    "within_budget",
    sometimes={"each_item_once": "its batches overflow, so a dropped last round may hold more than W - 1 budgets"},
    under="dynamic_batches",
)
class ClosesAfterOverflow(TokenBudgetBatchSampler):
    """Adds the item first and closes the batch only once it costs more than the budget, so
    the batch it closes holds one item too many."""

    def plan(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        batches: list[list[int]] = [[]]
        for index in order:
            batches[-1].append(index)
            if sum(self.lengths[i] for i in batches[-1]) > self.max_tokens:
                batches.append([])
        batches = [batch for batch in batches if batch]
        return batches[: len(batches) - len(batches) % self.num_replicas]


@rejected("test_batch_epoch", "each_item_once", under="dynamic_batches")
class PadsByRepeating(TokenBudgetBatchSampler):
    """Completes the last round with batches repeated from the start of the plan, as
    DistributedSampler pads indices: every rank runs as many steps, and the repeated
    batches are trained on twice (and counted twice in an evaluation)."""

    def plan(self) -> list[list[int]]:
        kept = self.num_replicas
        self.num_replicas = 1
        try:
            batches = super().plan()
        finally:
            self.num_replicas = kept
        short = -len(batches) % self.num_replicas
        return batches + (batches * self.num_replicas)[:short]


# It fails only where N is a multiple of batch_size: the groups' smaller N (up to 48) reach one.
@rejected("test_batch_epoch", "each_item_once", under="micro_batches")
class StepsEndBeforeTheLast(MicroBatchSampler):
    """Its steps start at ``range(0, N - batch_size, batch_size)``: the end is exclusive, so
    where N is a multiple of ``batch_size`` the last whole step is never read (N=4,
    batch_size=2: items 2 and 3 are left out of every epoch)."""

    def steps(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        return [
            order[start : start + self.batch_size] for start in range(0, len(order) - self.batch_size, self.batch_size)
        ]

    def __len__(self) -> int:
        return len(self.steps())


@rejected(
    "test_batch_epoch",
    "equal_batch_counts",
    {"batch_len_matches": "len() counts the steps, the empty ones it skipped too"},
    under="poisson",
)
class SkipsEmptyBatches(PoissonBatchSampler):
    """Skips the steps that drew nothing while ``len()`` still counts them, as opacus'
    ``DistributedUniformWithReplacementSampler`` does: the ranks run different numbers of steps."""

    def __iter__(self) -> Iterator[list[int]]:
        return (batch for batch in super().__iter__() if batch)


@rejected(
    "test_batch_epoch",
    "poisson_shards_disjoint",
    {"poisson_rate": "every item is drawn by every rank: W times the declared rate"},
    under="poisson",
)
class PoissonNotSharded(PoissonBatchSampler):
    """Draws from the whole dataset on every rank, as opacus' ``UniformWithReplacementSampler``
    does when a DDP script keeps it."""

    def shard(self) -> torch.Tensor:
        return torch.arange(self.dataset_size)


@rejected("test_poisson_rate", "poisson_rate", under="poisson")
class RateSplitAcrossRanks(PoissonBatchSampler):
    """Divides the sample rate by the number of ranks, "so that the global batch keeps its
    expected size": each item of a shard is drawn W times too rarely."""

    def __init__(self, lengths, num_replicas, rank, sample_rate, seed=0) -> None:
        super().__init__(lengths, num_replicas, rank, sample_rate, seed)
        self.sample_rate = sample_rate / num_replicas


@rejected(
    "test_batches_at_the_numeric_edge",
    "each_item_once",
    under="dynamic_batches",
    options=(*AT_THE_EDGES, "--cost=skip"),  # the edge reads 4 ranks whole: no cost to plan from
)
class BudgetSummedInInt32(TokenBudgetBatchSampler):
    """Sums a batch's cost in int32, as a tensor of lengths in ``torch.int32`` would: past 2^31
    tokens the sum wraps negative and every item seems to fit, so the batch never closes (the
    int32 wrap of Megatron-LM's index arithmetic, NVIDIA/Megatron-LM #1672, here in a batch's
    token count). At the edge all 64 items make one batch, a round short of 4 ranks, dropped:
    the epoch trains on nothing. Right at every size the draws reach."""

    def add(self, cost: int, length: int) -> int:
        return int(np.array([cost + length], dtype=np.int64).astype(np.int32)[0])
