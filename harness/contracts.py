"""Contracts: named sets of invariants a sampler promises, as data.

A contract is a set of flags (which invariants hold) plus a few facts the checkers need:
how a rank's share is cut from the global order (layout), how long each rank's share
is (length rule), whether the sampler ends, and whether it yields indices or batches.
Each property test asks ``contract.promises(flag)`` and is skipped, with the reason,
when the selected contract does not promise it. Flags can be turned off one by one
(``--without=FLAG``); the report lists what was turned off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

# Every invariant the suite knows, by flag, with the words used in failure messages.
INVARIANTS: dict[str, str] = {
    "len_matches_iter": "len() matches iteration",
    "equal_length": "equal per-rank lengths",
    "balanced": "balanced per-rank lengths",
    "valid_indices": "valid indices",
    "covers": "union coverage",
    "disjoint": "ranks disjoint unless padded",
    "pads_from_head": "padding from the head",
    "strided": "strided assignment",
    "contiguous": "contiguous assignment",
    "unshuffled_in_order": "shuffle=False keeps dataset order",
    "deterministic": "identical order without set_epoch",
    "reshuffles_on_set_epoch": "reshuffle with set_epoch",
    "seed_effective": "seed changes the order",
    "validates_arguments": "invalid arguments refused",
    "edge_sizes": "runs without crashing, edge sizes included",
    "equal_batches": "equal batch counts",
    "stream_blocks_are_permutations": "infinite stream blocks are permutations",
    "whole_batches": "batches whole on one rank",
    # Checked in real process groups only (conformance/).
    "agrees_across_ranks": "ranks agree on one global order",
    "group_defaults": "num_replicas/rank default to the process group",
    "loader_yields_sampler": "DataLoader yields the sampler's indices",
    "defaults": "built with the dataset alone, the contract's defaults",
}

# What each flag guards against, for --list-contracts and the README.
GUARDS: dict[str, str] = {
    "len_matches_iter": "__len__ disagreeing with iteration (wrong step counts, LR schedules)",
    "equal_length": "one rank running one step more than the others: DDP hangs",
    "balanced": "an eval shard far larger than the others",
    "valid_indices": "tensors, floats, negative or out-of-range indices, samplers that never stop",
    "covers": "silently dropped data",
    "disjoint": "silently duplicated data beyond the padding",
    "pads_from_head": "padding that is random, from the tail, or fails when N < W/2",
    "strided": "contiguous blocks where rank r must get Q[r::W]; rank-dependent orders",
    "contiguous": "strided shares where rank r must get a contiguous block",
    "unshuffled_in_order": "shuffle=False ignored",
    "deterministic": "global-RNG shuffles, reshuffling on every iter()",
    "reshuffles_on_set_epoch": "set_epoch ignored or not forwarded: the same order every epoch",
    "seed_effective": "seed ignored",
    "validates_arguments": "rank >= num_replicas accepted: a job trains on the wrong shard",
    "edge_sizes": "crashes (an exception, a hang, a dead rank) on empty datasets, N < W, W = 1, or any other "
                  "valid case; each crash is charged here once, with the smallest case, and the other invariants "
                  "are judged on the cases without one",
    "equal_batches": "uneven batch counts per rank: DDP hangs",
    "stream_blocks_are_permutations": "infinite streams that repeat or skip items within an epoch",
    "whole_batches": "batches split across ranks",
    "agrees_across_ranks": "per-process shuffles (hash() of a str, unseeded RNGs): ranks overlap and miss items",
    "group_defaults": "num_replicas/rank not taken from the process group when left out",
    "loader_yields_sampler": "samplers whose DataLoader batches differ from what they yield",
    "defaults": "drop-in replacements whose defaults differ (shuffle=False, drop_last=True, another seed), "
                "silently changing jobs that build them as DistributedSampler(dataset)",
}

# Checked in real process groups only (conformance/): a run of properties/ alone leaves them unchecked.
GROUP_ONLY = frozenset({"agrees_across_ranks", "group_defaults", "loader_yields_sampler", "defaults"})

LAYOUTS = ("strided", "contiguous", "any")
LENGTH_RULES = ("padded", "balanced")


@dataclass(frozen=True, repr=False)
class Contract:
    name: str
    family: str
    description: str
    flags: frozenset[str]
    layout: str = "strided"  # rank r's share of the global order Q: Q[r::W], a block, or unspecified
    length_rule: str = "padded"  # padded: ceil(N/W) each (floor with drop_last); balanced: sum N, spread <= 1
    finite: bool = True  # False: the sampler never stops; finite prefixes are read
    yields_batches: bool = False  # True: the sampler yields lists of indices (a batch sampler)
    # What Attr(dataset) must mean, for the `defaults` invariant: DistributedSampler's defaults.
    defaults: tuple[tuple[str, object], ...] = (("shuffle", True), ("seed", 0), ("drop_last", False))
    turned_off: frozenset[str] = frozenset()

    def __repr__(self) -> str:  # short: Hypothesis prints it in every falsifying example
        off = f", without={sorted(self.turned_off)}" if self.turned_off else ""
        return f"Contract({self.name!r}{off})"

    def _repr_pretty_(self, printer, cycle) -> None:  # the IPython protocol Hypothesis's printer follows
        printer.text(repr(self))

    def promises(self, flag: str) -> bool:
        return flag in self.flags

    def without(self, flags: frozenset[str]) -> "Contract":
        unknown = sorted(flags - set(INVARIANTS))
        if unknown:
            raise ValueError(f"unknown invariant(s) {', '.join(unknown)}; known: {', '.join(INVARIANTS)}")
        return replace(self, flags=self.flags - flags, turned_off=self.turned_off | (flags & self.flags))

    def expected_length(self, dataset_size: int, world_size: int, drop_last: bool, rank: int = 0) -> int:
        """Indices rank ``rank`` yields under this contract's length rule."""
        if self.length_rule == "balanced":
            return dataset_size // world_size + (1 if rank < dataset_size % world_size else 0)
        if drop_last:
            return dataset_size // world_size
        return math.ceil(dataset_size / world_size)

    def padding_size(self, dataset_size: int, world_size: int, drop_last: bool) -> int:
        """How many padded items the ranks yield together (0: none, every index at most once)."""
        if self.length_rule == "balanced" or drop_last:
            return 0
        return math.ceil(dataset_size / world_size) * world_size - dataset_size

    def prefix_length(self, dataset_size: int, world_size: int) -> int:
        """For infinite samplers: items read per rank, enough for two whole blocks of N."""
        return math.ceil(2 * dataset_size / world_size) + 1


_PER_EPOCH = {"len_matches_iter", "valid_indices", "covers", "disjoint", "validates_arguments", "edge_sizes",
              "agrees_across_ranks", "group_defaults", "loader_yields_sampler"}
_ORDER = {"deterministic", "reshuffles_on_set_epoch", "seed_effective"}
_ACROSS_PROCESSES = {"agrees_across_ranks", "group_defaults"}

TORCH = Contract(
    name="torch",
    family="A",
    description="DistributedSampler-compatible: ceil(N/W) per rank, strided, padded from the head",
    flags=frozenset(_PER_EPOCH | _ORDER | {"equal_length", "pads_from_head", "strided", "unshuffled_in_order", "equal_batches",
                                           "defaults"}),
)

CONTIGUOUS = Contract(
    name="contiguous",
    family="B",
    description="like torch, but rank r gets a contiguous block of the padded global order",
    flags=frozenset(_PER_EPOCH | _ORDER | {"equal_length", "pads_from_head", "contiguous", "unshuffled_in_order", "equal_batches",
                                           "defaults"}),
    layout="contiguous",
)

PARTITION = Contract(
    name="partition",
    family="C",
    description="exact partition for evaluation: no padding, disjoint, union is range(N), lengths differ by <= 1",
    flags=frozenset(_PER_EPOCH | {"balanced", "deterministic", "seed_effective"}),
    layout="any",
    length_rule="balanced",
)

INFINITE = Contract(
    name="infinite",
    family="D",
    description="endless stream: the ranks' interleaved streams form one stream whose blocks of N items are permutations",
    flags=frozenset({"valid_indices", "stream_blocks_are_permutations", "deterministic", "seed_effective", "validates_arguments",
                     "edge_sizes"} | _ACROSS_PROCESSES),
    finite=False,
)

BATCH = Contract(
    name="batch",
    family="F",
    description="batch sampler sharded across ranks: rank r gets whole batches r, r+W, ...; equal batch counts",
    flags=frozenset({"len_matches_iter", "valid_indices", "covers", "equal_batches", "whole_batches", "deterministic",
                     "validates_arguments", "edge_sizes", "loader_yields_sampler"} | _ACROSS_PROCESSES),
    layout="any",
    yields_batches=True,
)

CONTRACTS: dict[str, Contract] = {c.name: c for c in (TORCH, CONTIGUOUS, PARTITION, INFINITE, BATCH)}
DEFAULT_CONTRACT = TORCH.name


def describe_contracts() -> str:
    """The text of --list-contracts."""
    lines = []
    for contract in CONTRACTS.values():
        lines.append(f"{contract.name} (family {contract.family}): {contract.description}")
        for flag in INVARIANTS:
            if contract.promises(flag):
                lines.append(f"    {flag:32s} {INVARIANTS[flag]}: guards against {GUARDS[flag]}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
