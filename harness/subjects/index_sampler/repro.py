"""A plain-Python script that reproduces one counterexample of a per-epoch invariant without
the suite: it imports the sampler the spec names (and so torch), builds every rank's sampler of the
case with the arguments the suite built it with, reads each once as the test did, asserts the
promise (``repro_snippets.py``), prints the suite's words and the offending values, and exits
1 while the bug is there, 0 once it is fixed (docs/reproductions.md).

Covered so far: the per-epoch invariants of ``repro_snippets.SNIPPETS``; the resume and
elastic invariants of ``repro_resume.RESUME_SNIPPETS``, their edges and compositions
(``repro_compose``) and the state's own (``repro_states``); those of batches and endless
streams (``repro_batches``); and a measured cost (``repro_cost``); each found on simulated
ranks, of a sampler that shards itself. The rest raise :class:`CannotReproduce`, saying why."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from string import Template
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.subjects.common.reading import read_limit
from sampler_conformance.subjects.common.repro_script import (
    LARGEST_READ,
    LOAD,
    RAISED,
    SHORT,
    docstring,
    drawn,
    imports,
    refuse_at_the_edge,
    script_spec,
    tail,
)

from .case import IndexCase
from .checks import PER_EPOCH
from .contracts import SamplerContract
from .edges import ranks_read
from .plug import SamplerPlug
from .repro_batches import (
    BATCH_SNIPPETS,
    ENDLESS,
    ENDLESS_GENERIC,
    READ_BATCHES,
    TAKE_BATCHES,
    TAKE_PREFIX,
    family_snippet,
    reads_batches,
)
from .repro_batches import COVERED as FAMILY_COVERED
from .repro_compose import COMPOSE_SNIPPETS, compose_part
from .repro_cost import COST_SNIPPETS, cost_script
from .repro_group_readings import GROUP_ONLY, GroupReading
from .repro_groups import AS_IN_GROUPS, BATCHED_IN_GROUPS, RESUMED_IN_GROUPS, group_script
from .repro_resume import RESUME_SNIPPETS
from .repro_snippets import FAULT, READ_ONCE, SNIPPETS, Snippet, snippet
from .repro_states import STATE_SNIPPETS, state_part
from .resume_labels import EPOCH_LABEL

# Every invariant a script reads in one process: one epoch's (repro_snippets), a resume's and an
# elastic resume's (repro_resume), their edges and compositions (repro_compose), the state's own
# (repro_states), those of batches and endless streams (repro_batches), and those a group judges
# that one process shows (repro_groups)...
IN_PROCESS = {
    **BATCH_SNIPPETS,
    **SNIPPETS,
    **RESUME_SNIPPETS,
    **COMPOSE_SNIPPETS,
    **STATE_SNIPPETS,
    **AS_IN_GROUPS,
}
# ...and every one covered: besides those, a measured cost (repro_cost) and those only a group shows.
COVERED: dict[str, Snippet | GroupReading] = {**IN_PROCESS, **COST_SNIPPETS, **GROUP_ONLY}
# Those a script reads at a numeric edge, on the ranks the suite read there: the per-epoch
# invariants judged there (Judged.partial) whose snippet reads each rank of RANKS once.
# (pads_from_head, judged there too, reads a global order the ranks read do not make.)
AT_THE_EDGE = frozenset(
    judged.flag
    for judged in PER_EPOCH
    if judged.partial
    and judged.flag in SNIPPETS
    and SNIPPETS[judged.flag].reading is READ_ONCE
    and not SNIPPETS[judged.flag].global_order
)
# Those whose test reads several ways: the script reads the one the failing record names.
PART_OF = {**dict.fromkeys(COMPOSE_SNIPPETS, compose_part), **dict.fromkeys(STATE_SNIPPETS, state_part)}
# Those read alike of a sampler that yields batches, a pass's units its batches (TAKE_BATCHES):
# the resume's and the elastic resume's, the state's, and coverage, which counts their items.
READ_AS_UNITS = frozenset({*RESUME_SNIPPETS, *COMPOSE_SNIPPETS, *STATE_SNIPPETS, *AS_IN_GROUPS, "covers"})

# What the script is made of around its snippet (and the parts every subject's script shares,
# ``common/repro_script.py``); {name} is filled in, {{ }} stays a brace.
HEAD = """{docstring}

{imports}

SPEC = sys.argv[1] if len(sys.argv) > 1 else {spec!r}  # or another sampler, to compare
N, W, EPOCH = {n}, {w}, {epoch}
RANKS = {ranks}  # the ranks read: {ranks_said}
OPTIONS = {options!r}
DATASET = range(N)  # as the suite's dataset: N items, item i is i
LIMIT = {limit}  # a rank that yields more indices than this never stops


{load}


def length(sampler):
    return len(sampler) if hasattr(type(sampler), "__len__") else "no __len__"


def build(world, rank, epoch=EPOCH, **options):
    \"\"\"One rank's sampler, as the suite built it (``options`` in place of OPTIONS' own).\"\"\"
    sampler = Sampler(DATASET, {world_size_name}=world, rank=rank, **{{**OPTIONS, **options}})
    if epoch is not None and callable(getattr(sampler, "set_epoch", None)):  # a guarded loop's call
        sampler.set_epoch(epoch)
    return sampler


{take}


def read(world, rank, sampler=None):
    \"\"\"One rank's sampler (a new one, unless given), read once as the suite read it: len()
    before the pass, the pass, len() after.\"\"\"
    sampler = build(world, rank) if sampler is None else sampler
    before = length(sampler)
    yielded = take(sampler, LIMIT + 1)
    return yielded, before, length(sampler)


{short}


Sampler = load(SPEC)
{reading}
# The promise: {promise}
"""
# How the script takes a pass's units: indices, batches (repro_batches.TAKE_BATCHES), or the
# prefix of a sampler that never stops (repro_batches.TAKE_PREFIX).
TAKE_INDICES = '''def take(sampler, count):
    """A pass's first ``count`` indices (fewer, where it ends first)."""
    return list(itertools.islice(sampler, count))'''


def scripted(contract: Contract) -> frozenset[str]:
    """The flags a script is written for under ``contract``: of a sampler that never stops, those
    of its prefix; of one that yields batches, those ``repro_batches`` reads, those read alike of
    batches (:data:`READ_AS_UNITS`) and those a group script reads of batches; else every one covered."""
    assert isinstance(contract, SamplerContract)
    if not contract.finite:
        return frozenset({*ENDLESS, *ENDLESS_GENERIC})
    return frozenset({*FAMILY_COVERED, *READ_AS_UNITS, *BATCHED_IN_GROUPS} if contract.yields_batches else COVERED)


def scripted_at_the_edge(contract: Contract) -> frozenset[str]:
    """The flags a script is written for at a numeric edge under ``contract``: :data:`AT_THE_EDGE`
    of a finite sampler of indices, none of one that yields batches or never stops."""
    assert isinstance(contract, SamplerContract)
    return AT_THE_EDGE if contract.finite and not contract.yields_batches else frozenset()


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record`` (a violation record of a failed invariant, its
    case among its ``parameters``), to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, SamplerPlug) and isinstance(contract, SamplerContract)
    flag = record["flag"]
    if flag not in COVERED:
        raise CannotReproduce(f"no plain-Python reading of {flag} yet (covered: {', '.join(COVERED)})")
    if COVERED[flag].reading == FAULT and RAISED not in record["message"]:
        raise CannotReproduce("the sampler hung or its process died: a script would hang or die with it")
    if plug.wrapper is not None:
        raise CannotReproduce("the sampler is sharded by a library's wrapper")
    if plug.needs_process_group and not record.get("in_groups"):
        raise CannotReproduce("the sampler takes its rank from the group, and it was found on simulated ranks")
    if flag in COST_SNIPPETS:  # a measured cost, not a reading of ranks (repro_cost)
        return cost_script(plug, contract, record, filename)
    if not record.get("parameters"):
        raise CannotReproduce("it holds on no case in particular (a method the sampler lacks): no case to build")
    case = IndexCase.from_parameters(record["parameters"])
    refuse_at_the_edge(case.dataset_size, flag, scripted_at_the_edge(contract))
    # A resume's epoch is drawn apart from the case's (resume_draws.drawn).
    resumed = flag in RESUME_SNIPPETS or flag in PART_OF or flag in RESUMED_IN_GROUPS
    epoch = drawn(record, EPOCH_LABEL) if resumed else case.epoch
    if record.get("in_groups") and flag not in AS_IN_GROUPS:  # read in W processes of a gloo group (repro_groups.py)
        if reads_batches(flag, contract) and not contract.yields_batches:
            raise CannotReproduce(
                "it was found in real process groups, where a script reads no batch counts or endless streams yet"
            )
        body, modules = group_script(plug, contract, case, record)
        head = _head(plug, contract, case, record, filename, epoch, modules)
        return head.partition("\nSampler = load(SPEC)")[0] + "\n" + body
    if reads_batches(flag, contract) and not (contract.finite and flag in READ_AS_UNITS):
        # batches, an endless stream, or batch counts (repro_batches)
        filled = family_snippet(flag, contract, case, record, plug.world_size_name)
    else:
        found = PART_OF[flag](record) if flag in PART_OF else IN_PROCESS[flag]
        if contract.yields_batches and found.reading is READ_ONCE:  # each rank's batches, shown as such
            found = dataclasses.replace(found, reading=READ_BATCHES)
        filled = snippet(found, contract, case, record, plug.world_size_name)
    head = _head(plug, contract, case, record, filename, epoch, filled.imports, filled.reading, filled.promise)
    return head + filled.code + "\n" + tail(record, filled.promise)


def _head(
    plug: SamplerPlug,
    contract: SamplerContract,
    case: IndexCase,
    record: Mapping[str, Any],
    filename: str,
    epoch: int | None,
    modules: tuple[str, ...],
    reading: str = "",
    promise: str = "",
) -> str:
    """:data:`HEAD` filled in for the case, ``epoch`` the one its reading starts at."""
    spec = script_spec(plug)
    return HEAD.format(
        docstring=docstring(record, spec, filename),
        spec=spec,
        n=case.dataset_size,
        w=case.world_size,
        epoch=epoch,
        options=plug.options_taken(case.sampler_options(contract)),
        limit=read_limit(case.dataset_size),
        world_size_name=plug.world_size_name,
        load=LOAD,
        short=SHORT,
        take=_take(contract, case),
        **_ranks(case),
        promise=promise,
        reading=reading,
        imports=imports(modules),
    )


def _ranks(case: IndexCase) -> dict[str, str]:
    """RANKS, the ranks a script reads, and its comment: every one, but at a numeric edge, whose
    W ranks of ceil(N / W) indices each no script reads whole, the few the suite read there."""
    if case.dataset_size > LARGEST_READ:
        return {"ranks": repr(ranks_read(case)), "ranks_said": "at this numeric edge, those the suite read"}
    return {"ranks": "range(W)", "ranks_said": "every one"}


def _take(contract: SamplerContract, case: IndexCase) -> str:
    """How the script's read() takes a reading's units under ``contract``."""
    if not contract.finite:
        return Template(TAKE_PREFIX).substitute(prefix=contract.prefix_length(case.dataset_size, case.world_size))
    return TAKE_BATCHES if contract.yields_batches else TAKE_INDICES
