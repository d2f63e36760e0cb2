"""Contracts: named sets of invariants a sampler promises, as data.

A contract is a set of flags of the invariant registry (``harness.core.invariants``: which
invariants hold) plus a few facts the checkers need:
how a rank's share is cut from the global order (layout), how long each rank's share
is (length rule), whether the sampler ends, and whether it yields indices or batches.
Each property test asks ``contract.promises(flag)`` and is skipped, with the reason,
when the selected contract does not promise it. Flags can be turned off one by one
(``--without=FLAG``); the report lists what was turned off.

A base contract composes with extensions, written ``BASE+EXTENSION``: ``torch+resumable``
promises DistributedSampler's contract and, on top, that a run resumed from
``state_dict()`` goes on exactly where it stopped; ``torch+elastic`` promises that also on
another world size (:func:`contract_named`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .invariants import REGISTRY

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

    def without(self, flags: frozenset[str]) -> Contract:
        unknown = sorted(flags - set(REGISTRY))
        if unknown:
            raise ValueError(f"unknown invariant(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
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

TORCH = Contract(
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

PARTITION = Contract(
    name="partition",
    family="C",
    description="exact partition for evaluation: no padding, disjoint, union is range(N), lengths differ by <= 1",
    flags=frozenset(_SHARED_BY_FINITE_INDEX_CONTRACTS | {"balanced", "deterministic", "seed_effective"}),
    layout="any",
    length_rule="balanced",
)

INFINITE = Contract(
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

BATCH = Contract(
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

CONTRACTS: dict[str, Contract] = {c.name: c for c in (TORCH, CONTIGUOUS, PARTITION, INFINITE, BATCH)}
assert all(c.flags <= set(REGISTRY) for c in CONTRACTS.values()), "a contract promises an undeclared invariant"
DEFAULT_CONTRACT = TORCH.name


@dataclass(frozen=True)
class Extension:
    """Promises a base contract can be extended with: ``BASE+NAME``."""

    name: str
    description: str
    flags: frozenset[str]
    # Flags of other extensions this one withdraws: an elastic sampler accepts a state
    # from another world size, which a merely resumable one must refuse.
    withdraws: frozenset[str] = field(default_factory=frozenset)
    # The base contracts it composes with, and why only those (empty: every finite one).
    bases: frozenset[str] = field(default_factory=frozenset)
    bases_why: str = ""


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
assert all(e.flags <= set(REGISTRY) for e in EXTENSIONS.values()), "an extension promises an undeclared invariant"
CONTRACT_SYNTAX = (
    f"BASE or BASE+EXTENSION, BASE one of {', '.join(CONTRACTS)}, EXTENSION one of {', '.join(EXTENSIONS)}"
)


def contract_named(text: str) -> Contract:
    """The contract ``text`` names: a base contract, optionally ``+`` extensions
    (``torch+resumable``). Raises ValueError, saying what is known, for anything else."""
    base_name, *extension_names = [part.strip() for part in text.split("+")]
    if base_name not in CONTRACTS:
        raise ValueError(f"{base_name!r} is not a base contract; write {CONTRACT_SYNTAX}")
    base = CONTRACTS[base_name]
    unknown = [name for name in extension_names if name not in EXTENSIONS]
    if unknown:
        raise ValueError(f"{', '.join(map(repr, unknown))} is not an extension; write {CONTRACT_SYNTAX}")
    if len(set(extension_names)) != len(extension_names):
        raise ValueError(f"an extension is named twice; write {CONTRACT_SYNTAX}")
    if extension_names and not base.finite:
        finite = ", ".join(name for name, contract in CONTRACTS.items() if contract.finite)
        raise ValueError(
            f"the samplers of {base.name!r} never end, so there is no epoch to resume in; "
            f"extend a contract of finite samplers: {finite}"
        )
    extensions = [EXTENSIONS[name] for name in extension_names]
    for extension in extensions:
        if extension.bases and base.name not in extension.bases:
            raise ValueError(
                f"{extension.name!r} composes only with {', '.join(sorted(extension.bases))}: {extension.bases_why}"
            )
    if not extensions:
        return base
    flags = base.flags.union(*(e.flags for e in extensions)) - frozenset().union(*(e.withdraws for e in extensions))
    descriptions = "; ".join(f"{e.name}: {e.description}" for e in extensions)
    return replace(
        base,
        name="+".join([base.name, *extension_names]),
        description=f"{base.description}; {descriptions}",
        flags=flags,
    )


def describe_contracts() -> str:
    """The text of --list-contracts."""
    lines = []
    promises: list[tuple[str, frozenset[str]]] = [
        (f"{c.name} (family {c.family}): {c.description}", c.flags) for c in CONTRACTS.values()
    ]
    promises += [(f"+{e.name} (extension, {CONTRACT_SYNTAX}): {e.description}", e.flags) for e in EXTENSIONS.values()]
    for heading, flags in promises:
        lines.append(heading)
        for invariant in REGISTRY.values():
            if invariant.flag in flags:
                lines.append(f"    {invariant.flag:32s} {invariant.title}: guards against {invariant.guards}")
                where = f"; needs the sampler's {', '.join(invariant.needs)}" if invariant.needs else ""
                where += "".join(f"; needs {package} (pip install {package})" for package in invariant.packages)
                lines.append(f"    {'':32s} checked {invariant.where.value}{where}; known-bad: {invariant.known_bad}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
