"""The streaming dataset's contracts.

``stream`` is what a training loop over a streaming dataset needs without help: every item
exactly once per epoch across all (rank, worker) pairs, and, whenever the data divides evenly
into the ranks' workers' batches, the same number of batches on every rank. ``stream_exact``
drops the equal counts: it is what ``datasets.distributed.split_dataset_by_node`` promises
(its per-rank counts may differ, and a loop over it needs ``Join`` or its own bookkeeping).

``stream_padded`` and ``stream_truncated`` make the ranks' batch counts equal for every N,
as ``DistributedSampler`` does with ``drop_last`` False and True: by repeating fewer than
W x workers items, or by dropping fewer than W x workers. Which items they repeat or drop
must not depend on how many workers read the data (``same_items_any_workers``; under the
exact contracts that follows from every item exactly once, so they do not repeat it).

``stream_mix`` is a weighted mix of sources (``datasets.interleave_datasets(probabilities=)``,
litdata's ``CombinedStreamingDataset(weights=)``, webdataset's ``RandomMix``): each (rank,
worker) pair draws every item's source by the weights, independently of the other pairs, and
reads it from its own share of that source, so no item is read twice in an epoch; the pair
may stop when one of its shares runs out, so the epoch need not read every item.

``+resumable`` composes with each: a checkpoint of torchdata's ``StatefulDataLoader``, taken
anywhere in an epoch and loaded into a fresh dataset and loader, resumes the epoch where it
was, batch for batch, whatever the contract's own rule for the epoch is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sampler_conformance.core.contracts import Contract, Extension, Promise

MIX_PARAMETERS = ("sources", "weights")  # what a contract that mixes builds every dataset with


@dataclass(frozen=True, repr=False)
class StreamContract(Contract):
    subject: ClassVar[str] = "iterable_dataset"
    mixes: bool = False  # the factory is given sources and their weights (MIXED_BY_WEIGHT)

    def ignores(self, parameter: str) -> bool:
        """Only a contract that mixes builds a dataset with sources= and weights=."""
        return parameter in MIX_PARAMETERS and not self.mixes

    @property
    def equalizes(self) -> bool:
        """Whether it pads or drops to make the ranks' batch counts equal for every N (not only a multiple)."""
        return bool(self.flags & {"padded_once", "truncated_once"})


# The promises a streaming dataset's contract is composed of.
READS_THROUGH_WORKERS = Promise(
    "reads_through_workers",
    "each rank's dataset runs through DataLoader workers, every worker some of it, yielding the dataset's own "
    "items with valid ids; set_epoch reaches the workers",
)
STREAM_ORDER = Promise(
    "stream_order", "every process reads the same order, a function of the seed and the epoch, changed by either"
)
EXACTLY_ONCE = Promise(
    "exactly_once", "every item exactly once per epoch across all (rank, worker) pairs", per_epoch=True
)
EVEN_BATCHES = Promise(
    "even_batches", "every rank the same number of batches when N is a multiple of W x workers x batch_size"
)
PADDED_ONCE = Promise(
    "padded_once",
    "every item at least once, fewer than W x workers repeated to make the batch counts equal for every N, the same "
    "items whatever num_workers",
    per_epoch=True,
)
TRUNCATED_ONCE = Promise(
    "truncated_once",
    "no item twice, fewer than W x workers dropped to make the batch counts equal for every N, the same items "
    "whatever num_workers",
    per_epoch=True,
)
MIXED_BY_WEIGHT = Promise(
    "mixed_by_weight",
    "each (rank, worker) pair draws each item's source by the weights, independently of the other pairs, and reads "
    "it from its own share of the source: no item twice per epoch, the pair stopping when a share runs out",
    facts=(("mixes", True),),
    per_epoch=True,
)

STREAM = StreamContract.of(
    (READS_THROUGH_WORKERS, STREAM_ORDER, EXACTLY_ONCE, EVEN_BATCHES),
    name="stream",
    family="streaming dataset",
    description=(
        "each rank's IterableDataset, read through DataLoader workers, yields every item exactly once per epoch "
        "across all (rank, worker) pairs, and every rank the same number of batches when N is a multiple of "
        "W x workers x batch_size"
    ),
)

STREAM_EXACT = StreamContract.of(
    (READS_THROUGH_WORKERS, STREAM_ORDER, EXACTLY_ONCE),
    name="stream_exact",
    family="streaming dataset",
    description=(
        "every item exactly once per epoch across all (rank, worker) pairs; the ranks' batch counts may differ "
        "(what datasets' split_dataset_by_node promises)"
    ),
)

_REFERENCES = "sampler_conformance.adapters.torch_iterable"

STREAM_PADDED = StreamContract.of(
    (READS_THROUGH_WORKERS, STREAM_ORDER, EVEN_BATCHES, PADDED_ONCE),
    name="stream_padded",
    family="streaming dataset",
    description=(
        "every rank the same number of batches for every N: every item at least once per epoch, fewer than "
        "W x workers repeated to make the counts equal (DistributedSampler's padding), the same items whatever "
        "num_workers"
    ),
    reference=f"{_REFERENCES}:make_padded",
)

STREAM_TRUNCATED = StreamContract.of(
    (READS_THROUGH_WORKERS, STREAM_ORDER, EVEN_BATCHES, TRUNCATED_ONCE),
    name="stream_truncated",
    family="streaming dataset",
    description=(
        "every rank the same number of batches for every N: no item twice per epoch, fewer than W x workers "
        "dropped to make the counts equal (DistributedSampler's drop_last), the same items whatever num_workers"
    ),
    reference=f"{_REFERENCES}:make_truncated",
)

STREAM_MIX = StreamContract.of(
    (READS_THROUGH_WORKERS, STREAM_ORDER, MIXED_BY_WEIGHT),
    name="stream_mix",
    family="streaming dataset",
    description=(
        "a weighted mix of sources: each (rank, worker) pair draws every item's source by the weights "
        "(statistical, false alarm at most 1e-6 per certification), independently of the other pairs, from its own "
        "share of each source, no item twice per epoch; a pair may stop when one of its shares runs out"
    ),
    reference=f"{_REFERENCES}:make_mix",
)

CONTRACTS: dict[str, StreamContract] = {
    c.name: c for c in (STREAM, STREAM_EXACT, STREAM_PADDED, STREAM_TRUNCATED, STREAM_MIX)
}
RESUMABLE = Extension(
    name="resumable",
    description=(
        "a checkpoint of torchdata's StatefulDataLoader (loader.state_dict(), through torch.save and "
        "torch.load(weights_only=True)), taken anywhere in an epoch and loaded into a fresh dataset and loader, "
        "resumes exactly the rest of the epoch, batch for batch, then the same next epoch; a resumed run's "
        "checkpoint resumes again (docs/streaming-datasets.md, 'Resume')"
    ),
)

EXTENSIONS: dict[str, Extension] = {RESUMABLE.name: RESUMABLE}
