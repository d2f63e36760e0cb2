"""The index sampler's contracts: what each family of samplers promises, and the facts its checks need.

The facts: how a rank's share is cut from the global order (layout), how long each rank's
share is (length rule), whether the sampler ends, and whether it yields indices or batches.
The extensions (``+resumable``, ``+elastic``) add the resume protocols of
docs/resume-and-elastic.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sampler_conformance.core.contracts import Contract, Extension


@dataclass(frozen=True, repr=False)
class SamplerContract(Contract):
    subject = "index_sampler"
    layout: str = "strided"  # rank r's share of the global order Q: Q[r::W], a block, or unspecified
    length_rule: str = "padded"  # padded: ceil(N/W) each (floor with drop_last); balanced: sum N, spread <= 1
    finite: bool = True  # False: the sampler never stops; finite prefixes are read
    yields_batches: bool = False  # True: the sampler yields lists of indices (a batch sampler)
    # What Attr(dataset) must mean, for the `defaults` invariant: DistributedSampler's defaults.
    defaults: tuple[tuple[str, object], ...] = (("shuffle", True), ("seed", 0), ("drop_last", False))

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

    def why_not_extensible(self) -> str:
        if self.finite:
            return ""
        finite = ", ".join(name for name, contract in CONTRACTS.items() if contract.finite)
        return (
            f"the samplers of {self.name!r} never end, so there is no epoch to resume in; "
            f"extend a contract of finite samplers: {finite}"
        )


# What every contract of finite index samplers (torch, contiguous, partition) promises.
_SHARED_BY_FINITE_INDEX_CONTRACTS = {
    "len_matches_iter",
    "valid_indices",
    "covers",
    "disjoint",
    "validates_arguments",
    "edge_sizes",
    "agrees_across_ranks",
    "group_defaults",
    "loader_yields_sampler",
}
_ORDER = {"deterministic", "reshuffles_on_set_epoch", "seed_effective"}
_ACROSS_PROCESSES = {"agrees_across_ranks", "group_defaults"}

TORCH = SamplerContract(
    name="torch",
    family="A",
    description="DistributedSampler-compatible: ceil(N/W) per rank, strided, padded from the head",
    flags=frozenset(
        _SHARED_BY_FINITE_INDEX_CONTRACTS
        | _ORDER
        | {"equal_length", "pads_from_head", "strided", "unshuffled_in_order", "equal_batches", "defaults"}
    ),
)

# torch with one change: rank r gets a block of the global order instead of Q[r::W].
CONTIGUOUS = replace(
    TORCH,
    name="contiguous",
    family="B",
    description="like torch, but rank r gets a contiguous block of the padded global order",
    flags=TORCH.flags - {"strided"} | {"contiguous"},
    layout="contiguous",
)

PARTITION = SamplerContract(
    name="partition",
    family="C",
    description="exact partition for evaluation: no padding, disjoint, union is range(N), lengths differ by <= 1",
    flags=frozenset(_SHARED_BY_FINITE_INDEX_CONTRACTS | {"balanced", "deterministic", "seed_effective"}),
    layout="any",
    length_rule="balanced",
)

INFINITE = SamplerContract(
    name="infinite",
    family="D",
    description="endless stream: the ranks' interleaved streams form one stream whose blocks of N items are permutations",
    flags=frozenset(
        {
            "valid_indices",
            "stream_blocks_are_permutations",
            "deterministic",
            "seed_effective",
            "validates_arguments",
            "edge_sizes",
        }
        | _ACROSS_PROCESSES
    ),
    finite=False,
)

BATCH = SamplerContract(
    name="batch",
    family="F",
    description="batch sampler sharded across ranks: rank r gets whole batches r, r+W, ...; equal batch counts",
    flags=frozenset(
        {
            "len_matches_iter",
            "valid_indices",
            "covers",
            "equal_batches",
            "whole_batches",
            "deterministic",
            "validates_arguments",
            "edge_sizes",
            "loader_yields_sampler",
        }
        | _ACROSS_PROCESSES
    ),
    layout="any",
    yields_batches=True,
)

CONTRACTS: dict[str, SamplerContract] = {c.name: c for c in (TORCH, CONTIGUOUS, PARTITION, INFINITE, BATCH)}


RESUMABLE = Extension(
    name="resumable",
    description="state_dict()/load_state_dict() resume a run mid-epoch on the same world size: "
    "exactly the rest of the epoch, then the same later epochs "
    "(docs/resume-and-elastic.md, 'The resume protocol')",
    flags=frozenset(
        {
            "resume_continues",
            "resume_exactly_once",
            "resume_at_boundaries",
            "later_epochs_after_resume",
            "resumes_compose",
            "plain_state",
            "resumed_ranks_agree",
            "resumes_through_loader",
            "stale_state_refused",
            "other_world_size_refused",
        }
    ),
)

ELASTIC = Extension(
    name="elastic",
    description="resumable, and a state saved on W ranks resumes on W' ranks at the epoch's global cursor: the new "
    "ranks go on with exactly the rest of the epoch's global order "
    "(docs/resume-and-elastic.md, 'The elastic protocol')",
    flags=RESUMABLE.flags | {"elastic_cursor", "elastic_exactly_once", "elastic_ranks_agree", "elastic_hops_compose"},
    withdraws=frozenset({"other_world_size_refused"}),
    bases=frozenset({"torch", "batch"}),
    bases_why="a global cursor needs ranks that take turns through one global order: rank r takes items "
    "(or batches) r, r+W, ..., so what W ranks consumed is a prefix of it",
)

EXTENSIONS: dict[str, Extension] = {e.name: e for e in (RESUMABLE, ELASTIC)}
