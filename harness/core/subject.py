"""What a kind of thing under test tells the rest of the suite: the ``Subject`` record.

Each folder of ``harness/subjects/`` declares one (its ``SUBJECT``); ``harness.subjects``
lists them. The shared machinery (the pytest plugin, the report, the entry points) reads the
subject a contract names, and assumes none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .contracts import Contract, Extension, Promise
from .invariants import Invariant


class SpecError(Exception):
    """A spec that is malformed, does not import, or does not follow the subject's calling convention."""


class CannotReproduce(Exception):
    """Why a counterexample has no reproduction script (``Subject.reproduce``): its invariant,
    its subject or where it was found is not covered yet."""


# How a spec names a thing with no rank of its own and the wrapper that shards it (--shard-with).
SHARDED_WITH = " sharded with "


def sharded_spec(spec: str, wrapper: str) -> str:
    """The spec of what ``spec`` names, sharded across ranks by the wrapper named ``wrapper``."""
    return f"{spec}{SHARDED_WITH}{wrapper}"


@dataclass(frozen=True)
class Wrapper:
    """A library's wrapper that shards a thing with no rank of its own, as its trainer does."""

    name: str
    description: str  # what rank r reads, in the library's words
    module: str  # the module it comes from, imported to see that the library is installed
    package: str  # the distribution to pip install
    shard: Callable[[Any, int, int], Any]  # (inner thing, num_replicas, rank) -> what rank r reads


class Plug(Protocol):
    """A loaded subject, as the shared machinery sees it."""

    @property
    def spec(self) -> str:  # what the user named: MODULE:ATTR or FILE.py:ATTR
        ...

    @property
    def factory(self) -> Any:  # the class or function the spec names
        ...

    @property
    def source_file(self) -> str | None: ...

    @property
    def missing(self) -> tuple[str, ...]:  # the parameters of the calling convention it lacks
        ...

    @property
    def is_factory(self) -> bool:  # a function that builds the thing, not its class
        ...

    @property
    def needs_process_group(self) -> bool:  # it takes its rank from torch.distributed
        ...

    @property
    def worker_modules(self) -> tuple[str, ...]:  # what DataLoader workers reading it need imported
        ...


@dataclass(frozen=True)
class Subject:
    name: str  # its folder under harness/subjects/
    contracts: Mapping[str, Contract]  # the base contracts, each naming this subject
    extensions: Mapping[str, Extension]  # what they compose with: BASE+EXTENSION
    invariants: Sequence[Invariant]  # every flag its contracts and extensions promise
    crash_flag: str  # where a raise, a hang or a death is charged ("runs without crashing")
    invalid_item_flag: str  # where an item that is not what the convention says is charged
    load: Callable[[str], Plug]  # loads a spec, or raises SpecError saying how to fix it
    default_spec: str  # what is certified when no spec is given
    fixtures: str  # the module of the pytest fixtures its tests use, registered as a plugin for its contracts
    plug_fixture: str  # the fixture of that module its tests take the plug from: it marks a test as this subject's
    # What to learn of a plug once per process before its first test, on the ranks given:
    # probe(ranks, plug, contract, world_size) -> a finding to report, or None.
    probe: Callable[..., str | None] | None = None
    # What the cost probe (harness.execution.cost) builds: (plug, contract, N, W, rank) -> a
    # function building rank r's thing of a case of N items on W ranks, its inputs made
    # beforehand; None: its cost is not measured.
    cost_probe: Callable[..., Callable[[], Any]] | None = None
    cost_noun: str = ""  # what the probe times the first of, where not what a rank yields (yields)
    # The sizes --scale judges it at (numeric edges), and in words for the summary's line
    # where it did not ("N = 16,777,217 ... on W = 16,384 (...); --scale judges them ..."); empty: --scale adds none.
    edges: tuple[int, ...] = ()
    edges_said: str = ""
    # The largest N and W its simulated draws reach: the cost probe reads a whole pass there,
    # and the draws are planned from it (core/size_plan.py); (0, 0): its draws are not planned.
    drawn: tuple[int, int] = (0, 0)
    # Raises SpecError when a loaded plug cannot be certified under a contract of this subject
    # (a factory that does not take what the contract gives it); None: every plug fits.
    check_fit: Callable[[Plug, Contract], None] | None = None
    # What the report calls the thing under test ("the dataset raised"), and what it did to
    # break invalid_item_flag ("the sampler yielded items that are not indices").
    noun: str = "sampler"
    invalid_items: str = "yielded items that are not indices"
    yields: tuple[str, str] = ("index", "indices")  # what a rank yields, singular and plural
    # The wrappers that can shard its things (--shard-with), by name; the loader reads a spec
    # ``INNER sharded with NAME`` (sharded_spec) as INNER's thing inside NAME's wrapper.
    wrappers: Mapping[str, Wrapper] = field(default_factory=dict)
    # A plain-Python script that reproduces one counterexample without the suite:
    # (plug, contract, violation record, its file name) -> the script's text, or CannotReproduce
    # saying why not; None: none of its failures is reproduced yet (docs/reproductions.md).
    reproduce: Callable[[Plug, Contract, Mapping[str, Any], str], str] | None = None
    # The invariants of a contract its scripts are written for (a failure found where no script can
    # read it, or on a numeric edge, still gets none, and the summary says why).
    scripted: Callable[[Contract], frozenset[str]] = lambda contract: frozenset()
    # Of those, the ones its scripts are written for at a numeric edge (--scale) too, where they
    # read what the suite read there; the others are not offered there, the summary saying why.
    scripted_at_the_edge: Callable[[Contract], frozenset[str]] = lambda contract: frozenset()

    @property
    def fault_title(self) -> str:
        """The title a fault (a raise, a hang, a death) carries in the summary and the
        certificate, charged to ``crash_flag``: "sampler fault", "dataset fault"."""
        return f"{self.noun} fault"

    @property
    def promises(self) -> dict[str, Promise]:
        """The promises its contracts are composed of, by name, in the order they first appear
        (the extensions are not among them: they compose with a whole contract)."""
        return {p.name: p for c in self.contracts.values() for p in c.composed_of}

    @property
    def joint_promises(self) -> dict[str, tuple[str, Promise]]:
        """The promises its extensions make only beside another (``Extension.beside``), by
        name, each with the contract's extensions that make it (``+elastic+resumable``)."""
        return {
            promise.name: ("+" + "+".join(sorted((e.name, other))), promise)
            for e in self.extensions.values()
            for other, promise in e.beside
        }

    def _missing_foundation(self, contract: Contract) -> str:
        """Why ``contract`` cannot be certified: it does not promise the flags a fault or an
        invalid item is charged to (empty: it does)."""
        missing = [f for f in (self.crash_flag, self.invalid_item_flag) if not contract.promises(f)]
        if not missing:
            return ""
        holders = [p.name for p in self.promises.values() if p.flags & set(missing)]
        return (
            f"every {self.name} contract promises {', '.join(missing)}, where a fault or an invalid item is "
            f"charged; add {' and '.join(holders)}"
        )

    def compose(self, names: Sequence[str]) -> Contract:
        """The contract composed of the promises ``names``, as a user writes it when no named
        contract fits (``--contract=valid,finite_epochs,padded_epochs,strided``). Raises
        ValueError, saying how to fix it, for a name that is not one of its promises or a
        composition that does not make one contract."""
        unknown = [name for name in names if name not in self.promises]
        if unknown:
            raise ValueError(
                f"{', '.join(map(repr, unknown))} is not a promise of {self.name} contracts; "
                f"they are {', '.join(self.promises)}"
            )
        if len(set(names)) != len(names):
            raise ValueError("a promise is named twice")
        kind = type(next(iter(self.contracts.values())))
        contract = kind.of(
            [self.promises[name] for name in names],
            choices=list(self.promises.values()),
            name=",".join(names),
            family="composed",
            description="a contract of your own: " + "; ".join(self.promises[n].description for n in names),
        )
        why = self._missing_foundation(contract)
        if why:
            raise ValueError(why)
        return contract

    def __post_init__(self) -> None:
        for contract in self.contracts.values():
            why = self._missing_foundation(contract)
            if why:
                raise ValueError(f"contract {contract.name!r}: {why}")
        own = [*self.promises.values(), *self.extensions.values(), *(p for _, p in self.joint_promises.values())]
        for invariant in self.invariants:
            foreign = [p for p in invariant.promised_by if not any(p is promise for promise in own)]
            if foreign:
                raise ValueError(f"invariant {invariant.flag!r} of {self.name} says a promise of no contract of it")
        declared = {invariant.flag for invariant in self.invariants}
        undeclared = set().union(*(p.flags for p in own)) - declared
        if undeclared:  # made, naming a promise, but left out of the subject's list
            raise ValueError(f"subject {self.name!r} promises invariants it does not list: {sorted(undeclared)}")
        unsaid = [p.name for p in own if not p.flags]
        if unsaid:
            raise ValueError(f"subject {self.name!r}: no invariant says the promise(s) {', '.join(unsaid)}")
        if any(c.subject != self.name for c in self.contracts.values()):
            raise ValueError(f"subject {self.name!r} lists a contract of another subject")
