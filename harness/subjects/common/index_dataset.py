"""The dataset handed to samplers: length N, item i is i."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset


class IndexDataset(Dataset):
    """A sized dataset whose item ``i`` is the int ``i``; a DataLoader can load it."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> int:
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for a dataset of {self.size} items")
        return index

    def __repr__(self) -> str:
        return f"IndexDataset({self.size})"


def collate_indices(items: list[int]) -> torch.Tensor:
    """A DataLoader's batch of the dataset's items, as default_collate makes it, except that
    an empty batch (which a faulty batch sampler yields) stays an empty batch: the loader
    tests then compare it, and ``valid_indices`` charges it, where default_collate would
    raise IndexError inside the loader's own frames."""
    return torch.as_tensor(items, dtype=torch.int64)
