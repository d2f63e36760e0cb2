"""One drawn configuration of a distributed index sampler (or a batch sampler over its indices)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sampler_conformance.core.case import Case

if TYPE_CHECKING:
    from .contracts import SamplerContract

MAX_DATASET_SIZE = 10_000  # the largest N and W drawn (draws.py), unless the measured cost cuts N
MAX_WORLD_SIZE = 64


@dataclass(frozen=True)
class IndexCase(Case):
    """Everything that decides which indices every rank gets: the neutral case and the sampler's
    options (``batch_size`` builds a batch sampler, and batches a loader's reading)."""

    shuffle: bool = True
    drop_last: bool = False
    batch_size: int = 1
    repeats: int = 1  # G: the copies of each selected index (contracts of repeated groups)
    # How many items each label has (contracts of label-grouped batches); empty: two labels
    # of half the items each.
    label_counts: tuple[int, ...] = ()
    # How many items are portrait (width < height, aspect bucket 0; the others bucket 1), for
    # contracts of aspect-grouped batches; None: half of them, rounded down.
    portraits: int | None = None

    def sampler_options(self, contract: SamplerContract) -> dict[str, Any]:
        options: dict[str, Any] = {"shuffle": self.shuffle, "seed": self.seed, "drop_last": self.drop_last}
        if contract.yields_batches:  # batch samplers are built with the batch size
            options["batch_size"] = self.batch_size
        if contract.repeats:
            options["repeats"] = self.repeats
        if contract.labels:
            options["labels"] = self.labels().tolist()
        if contract.aspects:
            options["aspects"] = self.aspects().tolist()
        return options

    def aspects(self) -> np.ndarray:
        """Item i's aspect bucket, as mmdet's AspectRatioBatchSampler computes it from the
        item's width and height: 0 where width < height (``portraits`` items), 1 otherwise;
        scattered over the dataset by a permutation fixed by N (the labels' own)."""
        n = self.dataset_size
        portraits = n // 2 if self.portraits is None else self.portraits
        assert 0 <= portraits <= n, f"portraits={portraits} is not a count of N={n} items"
        buckets = (np.arange(n) >= portraits).astype(np.int64)
        return buckets[np.random.default_rng(n).permutation(n)]

    def labels(self) -> np.ndarray:
        """Item i's label: ``label_counts[k]`` items have label k, scattered over the dataset by
        a permutation fixed by N, so that no sampler finds a label's items side by side."""
        n = self.dataset_size
        counts = self.label_counts or (n - n // 2, n // 2)
        assert sum(counts) == n, f"label_counts {list(counts)} do not add up to N={n}"
        grouped = np.repeat(np.arange(len(counts)), counts)
        return grouped[np.random.default_rng(n).permutation(n)]

    def within(self, contract: SamplerContract) -> IndexCase:
        """This case with its batch size raised to one the contract's samplers take (the
        fixed cases of a test are written for any contract)."""
        return self.with_(batch_size=contract.batch_size_taken(self.batch_size))

    def describe(self) -> str:
        return (
            f"N={self.dataset_size}, W={self.world_size}, shuffle={self.shuffle}, "
            f"seed={self.seed}, epoch={self.epoch}, drop_last={self.drop_last}, "
            f"batch_size={self.batch_size}"
            + (f", repeats={self.repeats}" if self.repeats != 1 else "")
            + (f", label_counts={list(self.label_counts)}" if self.label_counts else "")
            + (f", portraits={self.portraits}" if self.portraits is not None else "")
        )
