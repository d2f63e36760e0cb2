"""The streaming dataset's contracts.

``stream`` is what a training loop over a streaming dataset needs without help: every item
exactly once per epoch across all (rank, worker) pairs, and, whenever the data divides evenly
into the ranks' workers' batches, the same number of batches on every rank. ``stream_exact``
drops the equal counts: it is what ``datasets.distributed.split_dataset_by_node`` promises
(its per-rank counts may differ, and a loop over it needs ``Join`` or its own bookkeeping).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sampler_conformance.core.contracts import Contract, Extension


@dataclass(frozen=True, repr=False)
class StreamContract(Contract):
    subject: ClassVar[str] = "iterable_dataset"

    def why_not_extensible(self) -> str:
        return "the streaming contracts have no extensions yet (resume through StatefulDataLoader is planned)"


_COMMON = frozenset(
    {
        "stream_runs",
        "item_ids",
        "no_foreign_items",
        "exactly_once",
        "no_starved_worker",
        "stream_deterministic",
        "stream_agrees",
        "stream_reshuffles",
        "epoch_reaches_workers",
    }
)

STREAM = StreamContract(
    name="stream",
    family="streaming dataset",
    description=(
        "each rank's IterableDataset, read through DataLoader workers, yields every item exactly once per epoch "
        "across all (rank, worker) pairs, and every rank the same number of batches when N is a multiple of "
        "W x workers x batch_size"
    ),
    flags=_COMMON | {"even_batches"},
)
STREAM_EXACT = StreamContract(
    name="stream_exact",
    family="streaming dataset",
    description=(
        "every item exactly once per epoch across all (rank, worker) pairs; the ranks' batch counts may differ "
        "(what datasets' split_dataset_by_node promises)"
    ),
    flags=_COMMON,
)

CONTRACTS: dict[str, StreamContract] = {c.name: c for c in (STREAM, STREAM_EXACT)}
EXTENSIONS: dict[str, Extension] = {}
