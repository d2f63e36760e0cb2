"""Contracts: named sets of invariants a sampler promises.

A contract is data. Each property test asks ``contract.promises(flag)`` and is skipped,
with the reason, when the selected contract does not promise it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Every invariant the suite knows, by flag, with the words used in failure messages.
INVARIANTS: dict[str, str] = {
    "len_matches_iter": "len() matches iteration",
    "equal_length": "equal per-rank lengths",
    "valid_indices": "valid indices",
    "covers": "union coverage",
    "pads_from_head": "padding from the head",
    "strided": "strided assignment",
    "unshuffled_in_order": "shuffle=False keeps dataset order",
    "deterministic": "identical order without set_epoch",
    "reshuffles_on_set_epoch": "reshuffle with set_epoch",
    "seed_effective": "seed changes the order",
    "validates_arguments": "invalid arguments refused",
    "edge_sizes": "edge sizes work",
    "equal_batches": "equal batch counts",
}


@dataclass(frozen=True)
class Contract:
    name: str
    description: str
    flags: frozenset[str]

    def promises(self, flag: str) -> bool:
        return flag in self.flags

    @staticmethod
    def expected_length(dataset_size: int, world_size: int, drop_last: bool) -> int:
        """DistributedSampler's num_samples: ceil(N/W), or floor(N/W) with drop_last."""
        if drop_last:
            return dataset_size // world_size
        return math.ceil(dataset_size / world_size)


TORCH = Contract(
    name="torch",
    description="torch.utils.data.DistributedSampler-compatible (strided, head padding)",
    flags=frozenset(INVARIANTS),
)

CONTRACTS: dict[str, Contract] = {TORCH.name: TORCH}
DEFAULT_CONTRACT = TORCH.name
