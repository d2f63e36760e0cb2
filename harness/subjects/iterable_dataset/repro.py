"""A plain-Python script that reproduces one counterexample of a streaming dataset's epoch
without the suite (docs/reproductions.md): it imports the factory the spec names (and torch),
builds every rank's dataset of the case with the arguments the suite built it with (the
layout's folder a fresh one, RANK and WORLD_SIZE exported as torchrun exports them), reads
each through a real DataLoader as the suite read it (the same workers, batches and worker
seeds), asserts the promise, prints the suite's words and exits 1 while the bug is there.

Covered (``SNIPPETS``): the invariants of one epoch of every rank and a fault charged to
``stream_runs`` where the dataset raised (``repro_snippets.py``); the order invariants and the
readings by another number of workers or by persistent ones (``repro_order.py``); a mix's
frequencies and pairs (``repro_mix.py``); the ``+resumable`` protocol through torchdata's
StatefulDataLoader, and a fault raised on the way through it (``repro_resume.py``). Found on
simulated ranks, or in real groups where one process, reading rank after rank through real
DataLoaders, shows it too; of a factory that takes its rank as told. What one process cannot
show, its ranks read in processes of their own (``repro_groups.py``): ``stream_agrees``, and
``replicas_read_alike`` on a device mesh. The rest raise :class:`CannotReproduce`, saying why."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.subjects.common.repro_script import (
    IN_GROUPS,
    snippet_for,
    tail,
)

from .case import StreamCase
from .contracts import StreamContract
from .plug import StreamPlug
from .repro_groups import READ_IN_PROCESSES, processes_script
from .repro_head import script_head
from .repro_mix import MIX_SNIPPETS
from .repro_order import ORDER_SNIPPETS
from .repro_resume import RESUME_SNIPPETS, RESUMED_FAULT
from .repro_snippets import FAULT, ONE_EPOCH_SNIPPETS

# The script's main part, run only as __main__: a DataLoader's workers started by forkserver or
# spawn (macOS, Python 3.14) import the script again, and must not read again.
MAIN = """Factory = load(SPEC)
WORKDIR = tempfile.mkdtemp(prefix="layout-")
{where}{reading}
# The promise: {promise}
{code}
{tail}"""

SNIPPETS = {**ONE_EPOCH_SNIPPETS, **ORDER_SNIPPETS, **MIX_SNIPPETS, **RESUME_SNIPPETS}


def scripted(contract: Contract) -> frozenset[str]:
    """The flags a script is written for, under every contract of the subject."""
    return frozenset({*SNIPPETS, *READ_IN_PROCESSES})


def _raised_in_a_resume(record: Mapping[str, Any]) -> bool:
    """The dataset raised in a test of the ``+resumable`` protocol (``test_FLAG`` of a resume
    invariant), where one epoch through a plain DataLoader may hold: the script reads the runs
    that test read."""
    return any(record["test"].startswith(f"test_{flag}") for flag in RESUME_SNIPPETS)


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record``, to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, StreamPlug) and isinstance(contract, StreamContract)
    if record["flag"] in READ_IN_PROCESSES:
        return processes_script(plug, record, filename)
    if plug.needs_process_group or plug.takes_mesh:
        raise CannotReproduce(
            "the dataset takes its rank from the process group or a device mesh: its ranks are read only in real "
            "process groups, a process per rank, which stream scripts start for stream_agrees and "
            "replicas_read_alike only"
        )
    if record["flag"] == "stream_runs" and _raised_in_a_resume(record):
        found = snippet_for(record, {"stream_runs": RESUMED_FAULT}, RESUMED_FAULT.read, "dataset")
    else:
        found = snippet_for(record, SNIPPETS, FAULT, "dataset")
    case, constants = found.setup(StreamCase.from_parameters(record["parameters"]), record)
    head = script_head(plug, record, filename, case, constants, found.imports)
    promise = found.promise.format(**constants)  # the constants the reading adds, written in
    main = MAIN.format(
        where=IN_GROUPS if record.get("in_groups") else "",
        reading=found.read,
        promise=promise,
        code=found.code,
        tail=tail(record, promise),
    )
    return head + 'if __name__ == "__main__":\n' + textwrap.indent(main, "    ")
