"""The certification's options, each read with one precedence: command line, then
environment variable, then ini file, then the default; parsed, with a usage error that says
how to fix a bad value."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from sampler_conformance.core.size_plan import CASE_BUDGET_S
from sampler_conformance.execution import simulator
from sampler_conformance.execution.backend import BACKENDS, DEFAULT_BACKEND
from sampler_conformance.execution.cost import READ_BUDGET_S
from sampler_conformance.execution.mesh import (
    DEFAULT_DATA_DIMS,
    LAYOUT_SYNTAX,
    DataDimensions,
    DrawnMeshes,
    MeshLayout,
    parse_meshes,
)
from sampler_conformance.subjects import (
    CONTRACT_SYNTAX,
    DEFAULT_CONTRACT,
    REGISTRY,
    SUBJECTS,
    WRAPPERS,
    contract_named,
)

DEFAULT_WORLD_SIZES = "1,2,4"  # sized for 2 cores; GPU nodes: --backend=nccl --world-sizes=8
# One group of 4 processes serves all three: the data dimension outermost, then innermost,
# then a mesh drawn for each example.
DEFAULT_MESHES = "dp2.tp2,tp2.dp2,drawn4"


@dataclass(frozen=True)
class Option:
    name: str  # command line flag without the dashes; the ini key has underscores
    env: str
    default: str
    help: str
    parse: Callable[[str], Any] = str
    repeatable: bool = False  # given several times on the command line; one per line in the environment or ini
    switch: bool = False  # on the command line alone (--NAME), it means "on"; the environment and ini say on or off

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


def _number(option: str, text: str, wanted: str, zero_allowed: bool = False) -> float:
    """``text`` as a positive number (or zero, where ``zero_allowed``); else a usage error saying ``wanted``."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0 or (value == 0 and not zero_allowed):
        raise pytest.UsageError(f"--{option}={text!r} must be {wanted}")
    return value


def _rank_timeout(text: str) -> float:
    return _number("rank-timeout", text, "positive seconds; e.g. --rank-timeout=60")


def _case_budget(text: str) -> float:
    return _number(
        "case-budget", text, "a number of seconds (e.g. --case-budget=0.25), or 0 to plan nothing", zero_allowed=True
    )


def _read_budget(text: str) -> float:
    return _number("read-budget", text, "positive seconds; e.g. --read-budget=300")


def _backend_name(text: str) -> str:
    if text not in BACKENDS:
        raise pytest.UsageError(f"--backend={text!r} is not a backend; choose one of: {', '.join(BACKENDS)}")
    return text


def _world_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise pytest.UsageError(
            f"--world-sizes={text!r} is not a comma-separated list of positive ints; e.g. --world-sizes=1,2,4"
        )
    return tuple(sorted(set(sizes)))


def _mesh_texts(text: str) -> tuple[str, ...]:
    """The meshes as written: :func:`mesh_layouts` reads them, once --data-dims is known."""
    texts = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not texts:
        raise pytest.UsageError(
            f"--meshes={text!r} names no mesh; give comma-separated meshes, e.g. --meshes={DEFAULT_MESHES}"
        )
    return texts


def mesh_layouts(texts: tuple[str, ...], data: DataDimensions) -> tuple[MeshLayout | DrawnMeshes, ...]:
    """The meshes of --meshes, their data dimensions those of --data-dims; a usage error that
    says how to write one."""
    try:
        return tuple(dict.fromkeys(parse_meshes(text, data) for text in texts))
    except ValueError as error:
        raise pytest.UsageError(f"--meshes={','.join(texts)!r}: {error}") from None


def _data_dims(text: str) -> DataDimensions:
    try:
        return DataDimensions.parse(text)
    except ValueError as error:
        raise pytest.UsageError(f"--data-dims={text!r}: {error}") from None


RANKS_CHOICES = ("all", "simulated", "groups")


def _memory_budget(text: str) -> float | None:
    """``auto`` (None: a share of the machine's available memory) or GiB, positive."""
    if text == "auto":
        return None
    return _number("memory-budget", text, "auto or a positive number of GiB; e.g. --memory-budget=4")


COST_CHOICES = ("measure", "skip")


def _cost_choice(text: str) -> str:
    if text not in COST_CHOICES:
        raise pytest.UsageError(f"--cost={text!r} is not a choice; choose one of: {', '.join(COST_CHOICES)}")
    return text


def _production_size(text: str) -> float | None:
    """``none``, or a number of items, 3.5e9 or 3500000000."""
    if text == "none":
        return None
    try:
        size = float(text)
    except ValueError:
        size = 0.0
    if size < 1:
        raise pytest.UsageError(f"--production-size={text!r} is not a number of items; e.g. --production-size=3.5e9")
    return size


def _production_world(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(f"--production-world={text!r} is not a number of ranks; e.g. --production-world=1024")
    return int(text)


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise pytest.UsageError(f"{text!r} is neither on nor off (CONFORMANCE_SCALE, or scale in the ini file)")
    return text == "on"


def _repro(text: str) -> bool:
    if text not in ("on", "off"):
        raise pytest.UsageError(
            f"--repro={text!r} is neither on nor off; --repro=off writes no reproduction scripts (docs/reproductions.md)"
        )
    return text == "on"


def _ranks_choice(text: str) -> str:
    if text not in RANKS_CHOICES:
        raise pytest.UsageError(f"--ranks={text!r} is not a choice; choose one of: {', '.join(RANKS_CHOICES)}")
    return text


def _flag_list(text: str) -> frozenset[str]:
    flags = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(flags - set(REGISTRY))
    if unknown:
        raise pytest.UsageError(
            f"--without={text!r}: unknown invariant(s) {', '.join(unknown)}; see --list-contracts for the flags"
        )
    return flags


def _expected_failures(text: str) -> dict[str, str]:
    """``FLAG:REASON`` per line (one per --expect-failure): the invariants broken on purpose."""
    failures = {}
    for line in filter(str.strip, text.splitlines()):
        flag, colon, reason = (part.strip() for part in line.partition(":"))
        if not colon or not reason:
            raise pytest.UsageError(
                f"--expect-failure={line!r}: give the invariant and why it fails on purpose, FLAG:REASON, e.g. "
                f"--expect-failure='pads_from_head:we pad from the tail, see #12'"
            )
        if flag not in REGISTRY:
            raise pytest.UsageError(
                f"--expect-failure={line!r}: unknown invariant {flag!r}; see --list-contracts for the flags"
            )
        failures[flag] = reason
    return failures


def _contract_name(text: str) -> str:
    try:
        contract_named(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--contract={text!r}: {exc}") from None
    return text


def _wrapper_name(text: str) -> str:
    if text and text not in WRAPPERS:
        raise pytest.UsageError(f"--shard-with={text!r} is not a known wrapper; choose one of: {', '.join(WRAPPERS)}")
    return text


OPTIONS = (
    Option(
        "sampler",
        "CONFORMANCE_SAMPLER",
        "",
        "what is under test, as MODULE:ATTR or path/to/file.py:ATTR, called the way the contract's subject says "
        "(an index sampler: Attr(dataset, num_replicas=W, rank=r, shuffle=, seed=, drop_last=); a streaming "
        "dataset, under --contract=stream: make(dataset_size, *, rank, world_size, ...)) "
        f"(default: the contract's reference, {SUBJECTS[contract_named(DEFAULT_CONTRACT).subject].default_spec} "
        "for the index-sampler contracts that yield indices; --list-contracts names each)",
    ),
    Option(
        "shard-with",
        "CONFORMANCE_SHARD_WITH",
        "",
        "the --sampler has no rank of its own (it is built as Attr(dataset, shuffle=, seed=, drop_last=, ...)) and "
        "this library's wrapper shards it, as the library's trainer does; certify what each rank reads. One of: "
        + "; ".join(f"{name}: {wrapper.description}" for name, wrapper in WRAPPERS.items()),
        _wrapper_name,
    ),
    Option(
        "contract",
        "CONFORMANCE_CONTRACT",
        DEFAULT_CONTRACT,
        f"contract the sampler promises: {CONTRACT_SYNTAX}, e.g. torch+resumable (default {DEFAULT_CONTRACT})",
        _contract_name,
    ),
    Option(
        "without",
        "CONFORMANCE_WITHOUT",
        "",
        "comma-separated invariants to turn off, e.g. --without=seed_effective,pads_from_head "
        "(see --list-contracts); the report lists them as turned off",
        _flag_list,
    ),
    Option(
        "expect-failure",
        "CONFORMANCE_EXPECT_FAILURE",
        "",
        "FLAG:REASON, an invariant the sampler breaks on purpose, and why; repeat it for each. It is judged as "
        "the others: its failure is expected (a strict xfail), the verdict says 'conforms as declared' and "
        "exits 0, and it failing no more fails the run, so that the declaration goes",
        _expected_failures,
        repeatable=True,
    ),
    Option(
        "certificate",
        "CONFORMANCE_CERTIFICATE",
        "",
        "write the certificate to PATH.json and PATH.md (also when the run fails)",
    ),
    Option(
        "repro",
        "CONFORMANCE_REPRO",
        "on",
        "write a plain-Python script that reproduces each failed invariant without the suite, run it before "
        "naming it on the summary (docs/reproductions.md), or off (default %(default)s)",
        _repro,
    ),
    Option(
        "repro-dir",
        "CONFORMANCE_REPRO_DIR",
        "",
        "the folder the reproduction scripts are written to (default: PATH.repros beside --certificate=PATH, "
        "else .sampler-conformance/repros/SPEC)",
    ),
    Option(
        "rank-timeout",
        "CONFORMANCE_RANK_TIMEOUT",
        str(simulator.DEFAULT_TIMEOUT_S),
        "seconds one rank may spend on one step before it is reported as hung: in-process one call into its "
        "sampler (a constructor, a pass, len()), in a process group one case (default %(default)s)",
        _rank_timeout,
    ),
    Option(
        "memory-budget",
        "CONFORMANCE_MEMORY_BUDGET",
        "auto",
        "GiB each process that runs the sampler may allocate above its start; past it the allocation fails in "
        "the sampler, a fault of its own, and nothing else on the machine runs out (default %(default)s: a "
        "quarter of the memory available when the run starts, at least 1)",
        _memory_budget,
    ),
    Option(
        "cost",
        "CONFORMANCE_COST",
        "measure",
        "measure what one rank of the subject costs as N grows (peak memory, time to the first item), before the "
        "draws, in a process per size (about 2 s), or skip it (default %(default)s)",
        _cost_choice,
    ),
    Option(
        "case-budget",
        "CONFORMANCE_CASE_BUDGET",
        str(CASE_BUDGET_S),
        "seconds the passes of one drawn case may take, projected from the cost measured before the draws: a "
        "slower sampler is drawn smaller N, and the sizes left out are not judged (docs/scale.md); 0 plans "
        "nothing (default %(default)s)",
        _case_budget,
    ),
    Option(
        "scale",
        "CONFORMANCE_SCALE",
        "off",
        "judge at the numeric edges too: an index sampler at N = 2^24 + 1, 2^31 + 1, 2^32 + 1 and "
        "--production-size on 16,384 ranks, reading a few ranks of each, where the cost measured before the draws "
        "affords it; a weighted sampler at 2^24 + 1 weights; a token budget past uint32 (docs/scale.md); env "
        "CONFORMANCE_SCALE=on",
        _on_off,
        switch=True,
    ),
    Option(
        "read-budget",
        "CONFORMANCE_READ_BUDGET",
        f"{READ_BUDGET_S:g}",
        "seconds the reading of one numeric-edge case may take, projected from the cost measured before the "
        "draws: an edge projected past it is not judged, and the summary says why; raise it on a slow machine "
        "(default %(default)s)",
        _read_budget,
    ),
    Option(
        "production-size",
        "CONFORMANCE_PRODUCTION_SIZE",
        "none",
        "the N a job trains on (3.5e9): the summary projects one rank's measured cost there, on "
        "--production-world ranks (default %(default)s)",
        _production_size,
    ),
    Option(
        "production-world",
        "CONFORMANCE_PRODUCTION_WORLD",
        "1024",
        "the ranks of the job --production-size projects to (default %(default)s)",
        _production_world,
    ),
    Option(
        "backend",
        "CONFORMANCE_BACKEND",
        DEFAULT_BACKEND,
        "torch.distributed backend of the rank pools: auto (nccl with one CUDA device per rank, else gloo), "
        "gloo or nccl (default %(default)s)",
        _backend_name,
    ),
    Option(
        "world-sizes",
        "CONFORMANCE_WORLD_SIZES",
        DEFAULT_WORLD_SIZES,
        "comma-separated world sizes of the real process groups (default %(default)s)",
        _world_sizes,
    ),
    Option(
        "meshes",
        "CONFORMANCE_MESHES",
        DEFAULT_MESHES,
        f"comma-separated device meshes a contract +mesh is certified on, each {LAYOUT_SYNTAX}; the dimensions "
        "--data-dims names carry data (default %(default)s)",
        _mesh_texts,
    ),
    Option(
        "data-dims",
        "CONFORMANCE_DATA_DIMS",
        DEFAULT_DATA_DIMS,
        "the dimensions of --meshes that carry data, comma-separated names, each maybe ending * for a prefix "
        "(default %(default)s: dp, dp_replicate, dp_shard; data_parallel for Lightning's)",
        _data_dims,
    ),
    Option(
        "ranks",
        "CONFORMANCE_RANKS",
        "all",
        "where the ranks run: simulated (in this process, a quick check), groups (real process groups of each "
        "of --world-sizes) or all, the certification (default %(default)s)",
        _ranks_choice,
    ),
)


# What --list-contracts given without a name lists: everything.
EVERY_CONTRACT = "*"


def add_options(parser: pytest.Parser) -> None:
    """Each option on the command line (``--NAME``) and in the ini file; and ``--list-contracts``."""
    group = parser.getgroup("sampler conformance")
    for option in OPTIONS:
        text = option.help.replace("%(default)s", option.default)
        if option.switch:
            group.addoption(
                f"--{option.name}", dest=option.dest, default=None, action="store_const", const="on", help=text
            )
        else:
            group.addoption(
                f"--{option.name}",
                dest=option.dest,
                default=None,
                action="append" if option.repeatable else "store",
                help=f"{text}; env {option.env}",
            )
        if option.repeatable:
            parser.addini(option.dest, help=text, type="linelist")
        else:
            parser.addini(option.dest, help=text, default=None)
    group.addoption(
        "--list-contracts",
        nargs="?",
        const=EVERY_CONTRACT,
        default=None,
        metavar="NAME",
        help="print each contract and its invariants, then exit; =NAME: only a subject, contract, promise or invariant",
    )


def setting(config: pytest.Config, option: Option) -> Any:
    """Command line, then environment, then ini, then default; parsed."""
    value = config.getoption(option.dest)
    if value is None:
        value = os.environ.get(option.env) or None
    if value is None:
        value = config.getini(option.dest) or None
    if isinstance(value, list):  # a repeatable option's values, one per line
        value = "\n".join(value)
    return option.parse(value if value is not None else option.default)


def option_named(name: str) -> Option:
    return next(option for option in OPTIONS if option.name == name)
