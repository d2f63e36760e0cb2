"""Subjects: the kinds of thing under test, one folder each, and the registry of them.

``index_sampler``: an index sampler called the way DistributedSampler is.
``iterable_dataset``: a streaming dataset, split across ranks and DataLoader workers.
``weighted_sampler``: a sampler drawing indices with replacement, by weight.
``batch_sampler``: a batch sampler forming its own batches, by a token budget or a Poisson rate.
``data_loader``: a data loader owning sampling and batching, each rank reading its part of every global batch.

A kind is a folder here whose ``__init__`` declares its ``SUBJECT``
(``harness.core.subject.Subject``), and a line in ``_KINDS`` below (``SUBJECTS`` is derived from it). Loading this package
enters every kind's invariants in the registry (``harness.core.invariants.REGISTRY``), and
reads a contract's name (``BASE`` or ``BASE+EXTENSION``) across all kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sampler_conformance.core.contracts import Contract, Extension, Promise, compose
from sampler_conformance.core.invariants import REGISTRY, Where, enter
from sampler_conformance.core.subject import Subject
from sampler_conformance.execution import mesh

from . import batch_sampler, data_loader, index_sampler, iterable_dataset, weighted_sampler

_KINDS = (
    index_sampler.SUBJECT,
    iterable_dataset.SUBJECT,
    weighted_sampler.SUBJECT,
    batch_sampler.SUBJECT,
    data_loader.SUBJECT,
)
# The extensions of where the ranks run, which every kind composes with: +mesh.
_PLACEMENTS = {mesh.MESH.name: mesh.MESH}

for _subject in _KINDS:
    enter(_subject.invariants)
enter(mesh.DECLARED.invariants)
# The subject each invariant is of: a run certifies one subject, and leaves the others' tests out.
_SUBJECT_OF_FLAG: dict[str, str] = {i.flag: s.name for s in _KINDS for i in s.invariants}
SUBJECTS: dict[str, Subject] = {
    subject.name: replace(
        subject,
        extensions={**subject.extensions, **_PLACEMENTS},
        invariants=(*subject.invariants, *mesh.DECLARED.invariants),
    )
    for subject in _KINDS
}
DEFAULT_CONTRACT = "torch"
# Checked in real process groups only: a run on simulated ranks alone (--ranks=simulated) leaves them unchecked.
GROUP_ONLY: frozenset[str] = frozenset(flag for flag, i in REGISTRY.items() if i.where in (Where.GROUPS, Where.MESH))

CONTRACTS: dict[str, Contract] = {}
for _subject in SUBJECTS.values():
    for _name, _contract in _subject.contracts.items():
        if _name in CONTRACTS:
            raise ValueError(f"contract {_name!r} is declared by two subjects")
        CONTRACTS[_name] = _contract
# The subject whose contracts each promise is of: a composition names promises, not its subject.
_SUBJECT_OF_PROMISE: dict[str, Subject] = {}
for _subject in SUBJECTS.values():
    for _name in _subject.promises:
        if _name in _SUBJECT_OF_PROMISE or _name in CONTRACTS:
            raise ValueError(f"promise {_name!r} of {_subject.name} is also the name of another promise or contract")
        _SUBJECT_OF_PROMISE[_name] = _subject
# Every wrapper --shard-with may name, by name: each shards the things of the subjects that list it.
WRAPPERS = {name: wrapper for subject in SUBJECTS.values() for name, wrapper in subject.wrappers.items()}
EXTENSION_NAMES = list(dict.fromkeys(name for subject in SUBJECTS.values() for name in subject.extensions))
CONTRACT_SYNTAX = (
    f"BASE or BASE+EXTENSION, BASE one of {', '.join(CONTRACTS)} or PROMISE,PROMISE,... (a contract of "
    f"your own, composed of promises --list-contracts names), EXTENSION one of {', '.join(EXTENSION_NAMES)}"
)


def subject_of(contract: Contract) -> Subject:
    return SUBJECTS[contract.subject]


def subject_tested(flag: str | None, fixtures: Sequence[str]) -> str | None:
    """The subject a test certifies: its invariant's, else the one whose plug it takes; None for neither."""
    if flag in _SUBJECT_OF_FLAG:
        return _SUBJECT_OF_FLAG[flag]
    return next((subject.name for subject in SUBJECTS.values() if subject.plug_fixture in fixtures), None)


def _composed(text: str) -> Contract:
    """The contract of the comma-separated promises ``text`` names, all of one subject."""
    names = [name.strip() for name in text.split(",")]
    subjects = {_SUBJECT_OF_PROMISE[name].name for name in names if name in _SUBJECT_OF_PROMISE}
    if len(subjects) > 1:
        of = "; ".join(f"{n} of {_SUBJECT_OF_PROMISE[n].name}" for n in names if n in _SUBJECT_OF_PROMISE)
        raise ValueError(f"a contract composes the promises of one kind of thing under test, not several ({of})")
    if not subjects:
        raise ValueError(f"{text!r} names no contract and no promise; write {CONTRACT_SYNTAX}")
    try:
        return SUBJECTS[subjects.pop()].compose(names)
    except ValueError as error:
        raise ValueError(f"the promises {text!r} do not make a contract: {error}") from None


def contract_named(text: str) -> Contract:
    """The contract ``text`` names: a base contract, or the promises of a contract of the
    user's own separated by commas, optionally ``+`` extensions of its subject
    (``torch+resumable``). Raises ValueError, saying what is known, for anything else."""
    base_name, *extension_names = [part.strip() for part in text.split("+")]
    if base_name in CONTRACTS:
        base = CONTRACTS[base_name]
    elif "," in base_name or base_name in _SUBJECT_OF_PROMISE:
        base = _composed(base_name)
    else:
        raise ValueError(f"{base_name!r} is not a base contract; write {CONTRACT_SYNTAX}")
    known = subject_of(base).extensions
    unknown = [name for name in extension_names if name not in known]
    if unknown:
        of = f"an extension of {base_name!r} ({subject_of(base).name} contracts take {', '.join(known) or 'none'})"
        raise ValueError(f"{', '.join(map(repr, unknown))} is not {of}; write {CONTRACT_SYNTAX}")
    if len(set(extension_names)) != len(extension_names):
        raise ValueError(f"an extension is named twice; write {CONTRACT_SYNTAX}")
    return compose(base, [known[name] for name in extension_names])


def _bases_of(subject: Subject, extension: Extension) -> list[str]:
    """The named base contracts ``extension`` composes with (``compose`` refuses the others)."""
    return [name for name, contract in subject.contracts.items() if extension.composes_with(contract)]


def _in_the_repository(spec: str) -> str:
    """Where a known-bad lives: the selftests' corpus, in the suite's repository (the package
    does not ship it), ``selftests/corpus/known_bad.py:PadsFromTail``."""
    module, _, name = spec.partition(":")
    return f"{module.replace('.', '/')}.py:{name}"


def describe_contracts(only: str | None = None) -> str:
    """The text of --list-contracts: each contract, the promises it is composed of, and the
    invariants that say each; then each extension, a promise of its own. ``only`` narrows it
    to a subject, a contract or extension, the contracts composed of a promise (that promise
    alone), or those that promise an invariant (that invariant alone); ValueError if it names
    none of them."""
    lines = []
    for subject in SUBJECTS.values():
        listed: list[tuple[str, str, tuple[Promise, ...]]] = [
            (
                c.name,
                f"{c.name} (family {c.family}, reference {c.reference or subject.default_spec}): {c.description}",
                c.composed_of,
            )
            for c in subject.contracts.values()
        ]
        listed += [
            (e.name, f"+{e.name} (extension of {', '.join(_bases_of(subject, e))}): {e.description}", (e,))
            for e in subject.extensions.values()
        ]
        listed += [
            (together.lstrip("+"), f"{together} (extensions together): {promise.description}", (promise,))
            for together, promise in subject.joint_promises.values()
        ]
        for name, heading, promises in listed:
            whole = only is None or only.lstrip("+") in (name, subject.name)
            shown = [p for p in promises if whole or only in (p.name, *p.flags)]
            if not shown:
                continue
            lines.append(heading)
            for promise in shown:
                if len(promises) > 1:
                    lines.append(f"  {promise.name}: {promise.description}")
                for invariant in (i for i in subject.invariants if i.flag in promise.flags):
                    if not whole and only != promise.name and invariant.flag != only:
                        continue
                    lines.append(f"    {invariant.flag:32s} {invariant.title}: guards against {invariant.guards}")
                    where = f"; needs the sampler's {', '.join(invariant.needs)}" if invariant.needs else ""
                    where += "".join(f"; needs {package} (pip install {package})" for package in invariant.packages)
                    lines.append(
                        f"    {'':32s} checked {invariant.where.value}{where}; known-bad: "
                        f"{_in_the_repository(invariant.known_bad)}"
                    )
            lines.append("")
    if lines:
        lines.append(
            "A known-bad is a sampler with the bug its invariant guards against, the best example of it; it lies "
            "in the suite's repository (selftests/corpus/), not in the installed package. docs/contracts.md "
            "describes each."
        )
    if not lines:
        raise ValueError(
            f"--list-contracts={only}: no subject, contract, extension, promise or invariant of that name; "
            f"--list-contracts alone lists them all (subjects: {', '.join(SUBJECTS)}; contracts: "
            f"{', '.join(CONTRACTS)})"
        )
    lines.append(
        "A contract of your own: --contract=PROMISE,PROMISE,... with the promises above, of one subject "
        "(docs/contracts.md, 'A contract of your own')."
    )
    return "\n".join(lines).rstrip() + "\n"
