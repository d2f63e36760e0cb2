"""Contracts: named compositions of promises a subject makes, as data, and how they compose.

A promise is one thing a pipeline can be relied on for (every item once per epoch, rank r
takes Q[r::W], the same batch count on every rank, the order set by the seed and the epoch),
said by the few invariants of the registry (``harness.core.invariants``) that check it. A
contract is a composition of promises: its flags are theirs. Each kind of thing under test
subclasses :class:`Contract` with the facts its checks need
(``harness/subjects/<kind>/contracts.py``), declares its promises there, and names itself in
``subject``.
The plugin deselects the tests of a flag the contract does not promise
(``contract.promises(flag)``). Flags can be turned off one by one (``--without=FLAG``; the
report lists what was turned off), or declared broken on purpose, with a reason
(``--expect-failure=FLAG:REASON``, :meth:`Contract.expecting`): judged as the others, their
failure is expected, and the report says so.

A base contract composes with extensions, written ``BASE+EXTENSION``: ``torch+resumable``
promises DistributedSampler's contract and, on top, that a run resumed from
``state_dict()`` goes on exactly where it stopped (:func:`compose`; the names are read by
``harness.subjects.contract_named``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypeVar

from .invariants import REGISTRY

C = TypeVar("C", bound="Contract")


@dataclass(frozen=True)
class Promise:
    """One thing a contract promises, said by the invariants ``flags``; ``facts``, the fields of
    the subject's contract that reading the sampler under this promise takes (its layout across
    ranks, for one)."""

    name: str
    description: str
    facts: tuple[tuple[str, object], ...] = ()
    # The facts its checks read, each with the values they understand, that another promise of
    # the contract must set: padding from the head is judged along a strided or a contiguous
    # layout, so it needs a promise of one.
    needs: tuple[tuple[str, tuple[object, ...]], ...] = ()
    # It says what each epoch yields (every item once, padded, drawn by weight...): a contract
    # holds exactly one such promise.
    per_epoch: bool = False
    # The flags of the invariants that say it, each entered by the invariant's own declaration
    # (``Invariant.promised_by``): a new invariant of a promise touches no contract.
    _said_by: set[str] = field(default_factory=set, init=False, compare=False, repr=False)

    @property
    def flags(self) -> frozenset[str]:
        return frozenset(self._said_by)

    def said_by(self, flag: str) -> None:
        self._said_by.add(flag)


@dataclass(frozen=True, repr=False)
class Contract:
    subject: ClassVar[str]  # the kind of thing under test: a folder of harness/subjects/
    name: str
    family: str
    description: str
    turned_off: frozenset[str] = frozenset()
    reference: str = ""  # the spec certified when none is given (empty: the subject's default_spec)
    composed_of: tuple[Promise, ...] = ()
    withdrawn: frozenset[str] = frozenset()  # flags an extension withdraws (see compose())
    # Invariants the sampler breaks on purpose, each with the user's reason (--expect-failure):
    # judged as the others, a failure of one is expected, and one that holds is a wrong declaration.
    expected_failures: tuple[tuple[str, str], ...] = ()

    @property
    def flags(self) -> frozenset[str]:
        """What it promises: its promises' flags, less those withdrawn and those turned off."""
        return frozenset().union(*(p.flags for p in self.composed_of)) - self.withdrawn - self.turned_off

    @classmethod
    def of(cls: type[C], promises: Sequence[Promise], choices: Sequence[Promise] = (), **fields: Any) -> C:
        """The contract composed of ``promises``: it promises their invariants and takes their
        facts. Raises ValueError, saying which promises and how to fix it (naming the fitting
        ones of ``choices``), where they do not make one contract: not exactly one says what
        each epoch yields, two set one fact apart, or one reads a fact that none sets."""

        def add_one(names: Sequence[str]) -> str:
            return f"add one of {', '.join(names)}" if names else "add one"

        per_epoch = [p.name for p in promises if p.per_epoch]
        if len(per_epoch) > 1:
            raise ValueError(f"{' and '.join(map(repr, per_epoch))} each say what each epoch yields; keep one")
        if not per_epoch:
            fixes = [p.name for p in choices if p.per_epoch]
            raise ValueError(f"none of the promises says what each epoch yields; {add_one(fixes)}")
        facts: dict[str, tuple[Any, str]] = {}
        for promise in promises:
            for name, value in promise.facts:
                if name in facts and facts[name][0] != value:
                    raise ValueError(
                        f"{facts[name][1]!r} and {promise.name!r} cannot be promised together: "
                        f"one says {name}={facts[name][0]!r}, the other {name}={value!r}"
                    )
                facts[name] = (value, promise.name)
        for promise in promises:
            for name, understood in promise.needs:
                if facts.get(name, (None,))[0] not in understood:
                    fixes = [p.name for p in choices if any(f == name and v in understood for f, v in p.facts)]
                    raise ValueError(
                        f"{promise.name!r} is judged along a {name} ({' or '.join(map(str, understood))}) another "
                        f"promise sets, and none here does; {add_one(fixes)}"
                    )
        taken: dict[str, Any] = {name: value for name, (value, _) in facts.items()}
        return cls(composed_of=tuple(promises), **taken, **fields)

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
        return replace(self, turned_off=self.turned_off | (flags & self.flags))

    def expecting(self, failures: Mapping[str, str]) -> Contract:
        """This contract with ``failures`` (flag: reason) declared broken on purpose. Raises
        ValueError where a flag is not one it promises, or a reason is empty."""
        unpromised = sorted(flag for flag in failures if not self.promises(flag))
        if unpromised:
            raise ValueError(
                f"{', '.join(unpromised)}: not invariant(s) contract {self.name!r} promises; it promises "
                f"{', '.join(sorted(self.flags))}"
            )
        unexplained = sorted(flag for flag, reason in failures.items() if not reason.strip())
        if unexplained:
            raise ValueError(f"{', '.join(unexplained)}: say why it fails on purpose, FLAG:REASON")
        return replace(self, expected_failures=tuple(sorted({**dict(self.expected_failures), **failures}.items())))

    def expected_failure(self, flag: str) -> str | None:
        """The reason ``flag`` is declared to fail, or None where it is not."""
        return dict(self.expected_failures).get(flag)

    def why_not_extensible(self) -> str:
        """Why no extension composes with this contract (empty: they may)."""
        return ""

    def ignores(self, parameter: str) -> bool:
        """Whether this contract never passes ``parameter`` of its subject's calling convention,
        so that a sampler lacking it lacks nothing (none, unless a subject says)."""
        return False

    def missing(self, plug_missing: Sequence[str]) -> list[str]:
        """Of the parameters a plug lacks, those this contract would pass it."""
        return [parameter for parameter in plug_missing if not self.ignores(parameter)]

    def rules_out(self, params: Mapping[str, object]) -> bool:
        """Whether a test variant of these parameters (its ``callspec``) has nothing to judge
        under this contract, which the plugin then deselects (none, unless a subject says)."""
        return False


@dataclass(frozen=True)
class Extension(Promise):
    """A promise a base contract can be extended with: ``BASE+NAME``."""

    # Flags of other extensions this one withdraws: an elastic sampler accepts a state
    # from another world size, which a merely resumable one must refuse.
    withdraws: frozenset[str] = field(default_factory=frozenset)
    # The promises of which a base contract must hold one to compose with it, and why
    # (empty: every extensible contract).
    bases: frozenset[str] = field(default_factory=frozenset)
    bases_why: str = ""
    # Promises it makes only beside another extension, each with that extension's name: a data
    # loader's +resumable beside +elastic promises a resume on another DP size too. ``compose``
    # adds each where both extensions are composed.
    beside: tuple[tuple[str, Promise], ...] = ()

    def composes_with(self, base: Contract) -> bool:
        return not base.why_not_extensible() and (not self.bases or any(p.name in self.bases for p in base.composed_of))


def compose(base: C, extensions: Sequence[Extension]) -> C:
    """``base`` extended with ``extensions``: their promises added (and those two of them make
    together, ``Extension.beside``), their withdrawals removed.
    Raises ValueError, saying why, when one does not compose with ``base``."""
    if extensions and base.why_not_extensible():
        raise ValueError(base.why_not_extensible())
    for extension in extensions:
        if not extension.composes_with(base):
            raise ValueError(
                f"{extension.name!r} composes only with contracts promising "
                f"{' or '.join(sorted(extension.bases))}: {extension.bases_why}"
            )
    if not extensions:
        return base
    names = {e.name for e in extensions}
    joint = tuple(promise for e in extensions for other, promise in e.beside if other in names)
    descriptions = "; ".join(f"{p.name}: {p.description}" for p in (*extensions, *joint))
    return replace(
        base,
        name="+".join([base.name, *(e.name for e in extensions)]),
        description=f"{base.description}; {descriptions}",
        composed_of=(*base.composed_of, *extensions, *joint),
        withdrawn=base.withdrawn.union(*(e.withdraws for e in extensions)),
    )
