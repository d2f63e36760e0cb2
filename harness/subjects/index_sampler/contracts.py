"""The index sampler's contracts: what each family of samplers promises, and the facts its checks need.

Each contract is composed of the promises declared below (``SamplerContract.of``), which also
set its facts: how a rank's share is cut from the global order (layout), how long each rank's
share is (length rule), whether the sampler ends, and whether it yields indices or batches.
The extensions (``+resumable``, ``+elastic``) add the resume protocols of
docs/resume-and-elastic.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from sampler_conformance.core.contracts import Contract, Extension, Promise

LEAST_LABELLED_BATCH = 4  # two labels of two items each
# The layouts of per-rank batches: each rank's share of the one-rank order, as a
# DistributedSampler (strided) or a sampler of contiguous blocks (maskrcnn-benchmark's) cuts it.
STRIDED_SHARES, CONTIGUOUS_SHARES = "batches of strided shares", "batches of contiguous shares"


@dataclass(frozen=True, repr=False)
class SamplerContract(Contract):
    subject = "index_sampler"
    # The facts, each set by a promise (below) or left at its default.
    # rank r's share of Q: strided, contiguous, whole batches, batches of strided (or contiguous) shares, generation
    # batches, label-grouped batches, or any
    layout: str = "any"
    # padded: ceil(N/W) each (floor with drop_last); balanced: sum N, spread <= 1; truncated: floor(N/W)
    # each whatever drop_last says (the tail always dropped)
    length_rule: str = "padded"
    finite: bool = True  # False: the sampler never stops; finite prefixes are read
    yields_batches: bool = False  # True: the sampler yields lists of indices (a batch sampler)
    repeats: bool = False  # True: built with repeats=G, the copies of each selected index a generation batch holds
    labels: bool = False  # True: built with labels=, the label of each item, to group batches by
    aspects: bool = False  # True: built with aspects=, the aspect bucket of each item (0: width < height)
    # What Attr(dataset) must mean, for the `defaults` invariant: DistributedSampler's defaults.
    defaults: tuple[tuple[str, object], ...] = (("shuffle", True), ("seed", 0), ("drop_last", False))

    def expected_length(self, dataset_size: int, world_size: int, drop_last: bool, rank: int = 0) -> int:
        """Indices rank ``rank`` yields under this contract's length rule."""
        if self.length_rule == "balanced":
            return dataset_size // world_size + (1 if rank < dataset_size % world_size else 0)
        if self.drops_tail(drop_last):
            return dataset_size // world_size
        return math.ceil(dataset_size / world_size)

    def drops_tail(self, drop_last: bool) -> bool:
        """Whether a rank's share is floor(N/W), the global order's tail dropped: with drop_last,
        or always under a contract whose length rule truncates."""
        return drop_last or self.length_rule == "truncated"

    def length_words(self, drop_last: bool) -> str:
        """The length rule of a case, in the words of a violation: ``ceil(N/W)``."""
        if self.length_rule == "truncated":
            return "floor(N/W): the contract drops the tail whatever drop_last says"
        return "floor(N/W) with drop_last" if drop_last else "ceil(N/W)"

    def padding_size(self, dataset_size: int, world_size: int, drop_last: bool) -> int:
        """How many padded items the ranks yield together (0: none, every index at most once)."""
        if self.length_rule == "balanced" or self.drops_tail(drop_last):
            return 0
        return math.ceil(dataset_size / world_size) * world_size - dataset_size

    def batch_size_taken(self, batch_size: int) -> int:
        """The batch size its samplers are built with for ``batch_size``: the same, but that
        label-grouped samplers take only even sizes of at least four (two labels of two
        items), so below or between those it is raised to the next one."""
        if not self.labels:
            return batch_size
        return max(LEAST_LABELLED_BATCH, batch_size + batch_size % 2)

    def outside(self, dataset_size: int, batch_size: int) -> str:
        """Why a case of this size and batch size is outside what its samplers accept (empty:
        it is inside): a label-grouped sampler needs two labels of two items, and a batch
        size it takes (:meth:`batch_size_taken`)."""
        if not self.labels:
            return ""
        if dataset_size < LEAST_LABELLED_BATCH:
            return f"label-grouped batches need two labels of two items each: N >= {LEAST_LABELLED_BATCH}"
        if batch_size != self.batch_size_taken(batch_size):
            return f"label-grouped batches are built with an even batch_size >= {LEAST_LABELLED_BATCH}"
        return ""

    def prefix_length(self, dataset_size: int, world_size: int) -> int:
        """For infinite samplers: items read per rank, enough for two whole blocks of N."""
        return math.ceil(2 * dataset_size / world_size) + 1

    def rules_out(self, params: Mapping[str, object]) -> bool:
        """A contract that drops the tail whatever drop_last says has its keep_last variants
        judge that: the drop_last ones would judge it again, or be not applicable to a
        sampler without drop_last."""
        return self.length_rule == "truncated" and params.get("drop_last") is True

    def why_not_extensible(self) -> str:
        if self.finite:
            return ""
        finite = ", ".join(name for name, contract in CONTRACTS.items() if contract.finite)
        return (
            f"the samplers of {self.name!r} never end, so there is no epoch to resume in; "
            f"extend a contract of finite samplers: {finite}"
        )


# The promises an index sampler's contract is composed of.
VALID = Promise("valid", "valid indices on every valid case, edge sizes included, and invalid arguments refused")
ACROSS_PROCESSES = Promise(
    "across_processes",
    "in real process groups the ranks agree on one global order, and take their rank and world size from the group",
)
FINITE_EPOCHS = Promise(
    "finite_epochs",
    "each epoch ends: len() matches iteration, and a DataLoader yields what the sampler does",
    facts=(("finite", True),),
)
PADDED_EPOCHS = Promise(
    "padded_epochs",
    "each epoch covers range(N), the ranks disjoint but for padding: ceil(N/W) each, padded from the head",
    facts=(("length_rule", "padded"),),
    needs=(("layout", ("strided", "contiguous")),),
    per_epoch=True,
)
TRUNCATED_EPOCHS = Promise(
    "truncated_epochs",
    "each epoch drops the global order's tail whatever drop_last says: floor(N/W) each, the ranks disjoint, "
    "fewer than W items left out (DistributedSampler's drop_last=True, always)",
    facts=(("length_rule", "truncated"),),
    needs=(("layout", ("strided", "contiguous")),),
    per_epoch=True,
)
EXACT_PARTITION = Promise(
    "exact_partition",
    "each epoch is range(N) split without padding: covering, disjoint, lengths within 1 of each other",
    facts=(("length_rule", "balanced"),),
    per_epoch=True,
)
COVERS = Promise("covers", "each epoch yields every index", per_epoch=True)
PERMUTATION_BLOCKS = Promise(
    "permutation_blocks",
    "an endless stream: the ranks' interleaved streams form one whose blocks of N items are permutations",
    facts=(("finite", False),),
    per_epoch=True,
)
STRIDED = Promise("strided", "rank r takes Q[r::W] of the global order Q", facts=(("layout", "strided"),))
CONTIGUOUS_BLOCKS = Promise(
    "contiguous_blocks", "rank r takes a contiguous block of the padded global order", facts=(("layout", "contiguous"),)
)
WHOLE_BATCHES = Promise(
    "whole_batches",
    "rank r takes whole batches r, r+W, ...",
    facts=(("yields_batches", True), ("layout", "whole batches")),
)
PER_RANK_BATCHES = Promise(
    "per_rank_batches",
    "rank r cuts its batches from its own strided share of the global order, padded as DistributedSampler pads it, "
    "as DataLoader(batch_size=B, sampler=DistributedSampler(...)) does",
    facts=(("yields_batches", True), ("layout", STRIDED_SHARES)),
)
PER_RANK_CONTIGUOUS_BATCHES = Promise(
    "per_rank_contiguous_batches",
    "rank r cuts its batches from its own contiguous block of the global order, padded from its head (N // W "
    "items each with drop_last), as DataLoader(batch_size=B, sampler=S) does over a sampler S of contiguous blocks",
    facts=(("yields_batches", True), ("layout", CONTIGUOUS_SHARES)),
)
REPEATED_GROUPS = Promise(
    "repeated_groups",
    "generation batches of groups, as trl's GRPO trainer reads them: each round of the ranks' batches, gathered "
    "rank by rank, is groups of G consecutive copies of one index; each index in one group an epoch, and fewer "
    "than one generation batch's W x B / G indices left out",
    facts=(("yields_batches", True), ("layout", "generation batches"), ("repeats", True)),
    per_epoch=True,
)
EQUAL_BATCHES = Promise("equal_batches", "every rank the same number of batches, with drop_last or without")
DETERMINISTIC = Promise("deterministic", "the same order on every pass without set_epoch")
SEED_EFFECTIVE = Promise("seed_effective", "another seed, another order")
RESHUFFLES = Promise("reshuffles_on_set_epoch", "another epoch set, another order")
TORCH_ARGUMENTS = Promise(
    "torch_arguments",
    "DistributedSampler's arguments: shuffle=True, seed=0, drop_last=False by default; shuffle=False keeps the "
    "dataset's order",
    needs=(("layout", ("strided", "contiguous")),),
)
LABEL_GROUPS = Promise(
    "label_groups",
    "batches grouped by label, as sentence-transformers' GroupByLabelBatchSampler promises for triplet losses: "
    "every batch holds at least two labels, each at least twice; each index read once an epoch (the last "
    "round's padding aside); left out, only what cannot be grouped: a label's one item, one odd item a label, "
    "the excess of the label with the most left, and fewer than one round's W x B items",
    facts=(("yields_batches", True), ("layout", "label-grouped batches"), ("labels", True)),
    per_epoch=True,
)
ASPECT_GROUPED = Promise(
    "aspect_grouped",
    "per-rank batches grouped by aspect bucket, as mmdet's AspectRatioBatchSampler reads its rank's share of "
    "mmengine's DefaultSampler: every batch B items of one bucket but the rank's tail, its last two batches, of "
    "which at most one mixes the buckets and only the last is short; the rank's batches together are its "
    "padded strided share of ceil(N/W) items, with drop_last less the fewer than B it cannot fill a batch with",
    facts=(("yields_batches", True), ("layout", "aspect-grouped batches"), ("aspects", True)),
    per_epoch=True,
)
_TORCH_ORDER = (DETERMINISTIC, RESHUFFLES, SEED_EFFECTIVE, TORCH_ARGUMENTS)

TORCH = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, PADDED_EPOCHS, STRIDED, EQUAL_BATCHES, *_TORCH_ORDER),
    name="torch",
    family="A",
    description="DistributedSampler-compatible: ceil(N/W) per rank, strided, padded from the head",
)

# torch with one change: rank r gets a block of the global order instead of Q[r::W].
CONTIGUOUS = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, PADDED_EPOCHS, CONTIGUOUS_BLOCKS, EQUAL_BATCHES, *_TORCH_ORDER),
    name="contiguous",
    family="B",
    description="like torch, but rank r gets a contiguous block of the padded global order",
)

# torch's order with the tail always dropped: samplers with no drop_last, or that ignore it.
TRUNCATED = SamplerContract.of(
    (
        VALID,
        ACROSS_PROCESSES,
        FINITE_EPOCHS,
        TRUNCATED_EPOCHS,
        STRIDED,
        EQUAL_BATCHES,
        DETERMINISTIC,
        RESHUFFLES,
        SEED_EFFECTIVE,
    ),
    name="truncated",
    family="K",
    description="like torch with drop_last=True always: floor(N/W) per rank, strided, the global order's tail "
    "of fewer than W items dropped",
    reference="sampler_conformance.adapters.torch_truncated:always_drops_tail",
)

PARTITION = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, EXACT_PARTITION, DETERMINISTIC, SEED_EFFECTIVE),
    name="partition",
    family="C",
    description="exact partition for evaluation: no padding, disjoint, union is range(N), lengths differ by <= 1",
)

INFINITE = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, PERMUTATION_BLOCKS, DETERMINISTIC, SEED_EFFECTIVE),
    name="infinite",
    family="D",
    description="endless stream: the ranks' interleaved streams form one stream whose blocks of N items are permutations",
)

BATCH = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, COVERS, WHOLE_BATCHES, EQUAL_BATCHES, DETERMINISTIC),
    name="batch",
    family="F",
    description="batch sampler sharded across ranks: rank r gets whole batches r, r+W, ...; equal batch counts",
    reference="sampler_conformance.adapters.torch_batches:WholeBatches",
)

RANK_BATCHES = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, COVERS, PER_RANK_BATCHES, EQUAL_BATCHES, DETERMINISTIC, RESHUFFLES),
    name="rank_batches",
    family="G",
    description="batch sampler of per-rank batches: rank r cuts its batches from its own strided share of one "
    "global order, padded as DistributedSampler pads it; equal batch counts",
    reference="sampler_conformance.adapters.torch_batches:per_rank",
)

RANK_BLOCKS = SamplerContract.of(
    (
        VALID,
        ACROSS_PROCESSES,
        FINITE_EPOCHS,
        COVERS,
        PER_RANK_CONTIGUOUS_BATCHES,
        EQUAL_BATCHES,
        DETERMINISTIC,
        RESHUFFLES,
    ),
    name="rank_blocks",
    family="G",
    description="batch sampler of per-rank batches: rank r cuts its batches from its own contiguous block of one "
    "global order, padded from its head; equal batch counts",
    reference="sampler_conformance.adapters.torch_batches:per_rank_blocks",
)

GROUPS = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, REPEATED_GROUPS, EQUAL_BATCHES, SEED_EFFECTIVE),
    name="groups",
    family="H",
    description="batches of repeated samples for group-relative RL (GRPO): each generation batch, the ranks' "
    "batches of one round gathered rank by rank, is groups of G copies of one index, each index in one group an "
    "epoch; equal batch counts",
    reference="sampler_conformance.adapters.torch_batches:RepeatedGroups",
)

LABELS = SamplerContract.of(
    (VALID, ACROSS_PROCESSES, FINITE_EPOCHS, LABEL_GROUPS, EQUAL_BATCHES, DETERMINISTIC, RESHUFFLES, SEED_EFFECTIVE),
    name="labels",
    family="I",
    description="batches grouped by label for in-batch triplet mining: every batch at least two labels of at "
    "least two items each, each index once an epoch, only what cannot be grouped left out; equal batch counts",
    reference="sampler_conformance.adapters.torch_batches:LabelGroups",
)

ASPECT_RATIO = SamplerContract.of(
    (
        VALID,
        ACROSS_PROCESSES,
        FINITE_EPOCHS,
        ASPECT_GROUPED,
        EQUAL_BATCHES,
        DETERMINISTIC,
        RESHUFFLES,
        SEED_EFFECTIVE,
    ),
    name="aspect_ratio",
    family="J",
    description="per-rank batches grouped by aspect bucket (width < height or not) for detection: each rank's "
    "batches of one bucket but its last two, cut from its own padded strided share; equal batch counts",
    reference="sampler_conformance.adapters.torch_batches:AspectRatioBatches",
)

CONTRACTS: dict[str, SamplerContract] = {
    c.name: c
    for c in (
        TORCH,
        CONTIGUOUS,
        TRUNCATED,
        PARTITION,
        INFINITE,
        BATCH,
        RANK_BATCHES,
        RANK_BLOCKS,
        GROUPS,
        LABELS,
        ASPECT_RATIO,
    )
}


RESUMABLE = Extension(
    name="resumable",
    description="state_dict()/load_state_dict() resume a run mid-epoch on the same world size: "
    "exactly the rest of the epoch, then the same later epochs "
    "(docs/resume-and-elastic.md, 'The resume protocol')",
)

ELASTIC = Extension(
    name="elastic",
    description="resumable, and a state saved on W ranks resumes on W' ranks at the epoch's global cursor: the new "
    "ranks go on with exactly the rest of the epoch's global order "
    "(docs/resume-and-elastic.md, 'The elastic protocol')",
    withdraws=frozenset({"other_world_size_refused"}),
    bases=frozenset({STRIDED.name, WHOLE_BATCHES.name}),
    bases_why="a global cursor needs ranks that take turns through one global order: rank r takes items "
    "(or batches) r, r+W, ..., so what W ranks consumed is a prefix of it",
)

SCALABLE = Extension(
    name="scalable",
    description="one rank's peak memory and time to its first index grow with its share of the dataset (N/W), not "
    "with N: at a fixed share per rank, a job of a thousand times the items costs each rank no more "
    "(docs/scale.md)",
)

EXTENSIONS: dict[str, Extension] = {e.name: e for e in (RESUMABLE, ELASTIC, SCALABLE)}
