"""Reproduction scripts of a streaming dataset's failures that one process cannot show: the ranks
read in processes of their own, each building its dataset as the suite built it there and
reading it through its own DataLoader, the promise asserted over the readings in the script's
process.

- ``stream_agrees``: every rank's process a fresh interpreter with its own hash seed
  (``common/repro_groups.FRESH_PROCESSES``), each building rank 0's dataset and reading it, as
  the suite's test does: an order seeded by ``hash()`` of a str, or drawn from a global RNG,
  differs between them.
- ``replicas_read_alike`` on the device mesh the test named: every global rank a process of one
  gloo group (``common/repro_groups.RUN_RANKS``, ``common/repro_mesh``) that builds the mesh and
  its dataset as the suite builds it there (given the mesh and the global rank where the
  factory takes one, else its data coordinate: a factory that reads the group finds the global
  rank there).

The script's layout folder is removed at its exit: the ranks' processes forked from it share it,
a fresh interpreter (spawned, or started for ``stream_agrees``) makes its own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.subjects.common.repro_groups import (
    GROUP_IMPORTS,
    PROCESS_IMPORTS,
    fresh_processes,
    guarded,
    process_hash_seeds,
    run_ranks,
)
from sampler_conformance.subjects.common.repro_mesh import APART, MESH, mesh_layout, mesh_values
from sampler_conformance.subjects.common.repro_mesh import PROMISE as MESH_PROMISE
from sampler_conformance.subjects.common.repro_script import drawn, refuse_at_the_edge, tail

from .case import StreamCase
from .plug import StreamPlug
from .repro_head import script_head

# What follows the head: the factory and the layout's folder, here and in every process the script
# starts (which imports this file); then how the processes start, their reading, and the main part.
SCRIPT = """Factory = load(SPEC)  # here, and in every rank's process, which imports this file
# The layout's folder, removed at exit: a rank's process forked from here shares it, a fresh interpreter makes its own.
WORKDIR = tempfile.mkdtemp(prefix="layout-")
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)


{processes}


{reading}


{main}"""
MAIN = """{reading}
# The promise: {promise}
{code}
{tail}"""

# stream_agrees: rank AS_RANK's dataset built and read in a fresh interpreter for each rank, at the
# counterexample's epoch and the ones after it: an epoch of a few items is read alike by chance
# (two processes of webdataset's RandomMix over two items, 1 in 4), all of them with a chance of
# 4^-AGREES_EPOCHS.
AS_RANK = 0  # the rank whose dataset every process builds (test_stream_agrees_across_processes)
AGREES_EPOCHS = 16
AGREES_READING = '''def streams_of(rank):
    """Rank AS_RANK's dataset, built afresh in rank ``rank``'s process for each of EPOCHS and read
    there as the suite read it: its ids at each."""
    return [ids_of(read(build(AS_RANK), AS_RANK, LOADER_SEEDS[AS_RANK], [epoch])[0]) for epoch in EPOCHS]'''
AGREES_MAIN = """if RANK_OF_PROCESS:  # a process the script started: its reading, and no more
    in_process_of_rank(streams_of)
streams = start_processes(range(W))
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, DataLoader({LOADER}): rank {AS_RANK}'s dataset built in {W} processes, "
      f"one a rank, at epochs {EPOCHS[0]} to {EPOCHS[-1]}")
for r, epochs in enumerate(streams):
    differ = [e for e, mine, theirs in zip(EPOCHS, epochs, streams[0]) if mine != theirs]
    print(f"rank {r}'s process (PYTHONHASHSEED={HASH_SEEDS[r]}): epoch {EPOCHS[0]}: {short(epochs[0])}; "
          f"apart from rank 0's at {len(differ)} of {len(EPOCHS)} epochs")"""
AGREES_PROMISE = (
    "rank 0's dataset, built for the same case in every rank's process, yields the same stream in each, at every epoch."
)
AGREES_CODE = (
    "apart = [(r, k) for r in range(1, W) for k in range(len(EPOCHS)) if streams[r][k] != streams[0][k]]\n"
    "broken = bool(apart)\n"
    'shown = "; ".join(f"epoch {EPOCHS[k]}: rank 0\'s process read {short(streams[0][k])}, rank {r}\'s "\n'
    '                  f"{short(streams[r][k])}" for r, k in apart[:2])'
)

# replicas_read_alike: every global rank of the mesh a process of one gloo group.
MESH_READING = (
    MESH
    + '''


def read_in_group(world, rank):
    """This rank's dataset on the mesh, built as the suite builds it there, read once through its
    DataLoader: given the mesh with the global rank where the factory takes one, else its data
    coordinate (RANK and WORLD_SIZE the global ones, as torchrun exports them); its batches, as (worker, ids)."""
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", MESH_SIZES, mesh_dim_names=MESH_NAMES)
    options = taken({**OPTIONS, "workdir": WORKDIR})
    if "device_mesh" in inspect.signature(Factory).parameters:
        dataset = Factory(N, rank=rank, world_size=world, device_mesh=mesh, **options)
    else:
        dataset = Factory(N, rank=DATA_RANKS[rank], world_size=W, **options)
    return read(dataset, DATA_RANKS[rank], LOADER_SEEDS[DATA_RANKS[rank]])[0]'''
)
MESH_MAIN = """ranks = run_ranks(len(DATA_RANKS))
print(f"{SPEC}: N={N}, W={W} data-parallel ranks on the mesh {dict(zip(MESH_NAMES, MESH_SIZES))}, epoch={EPOCH}, "
      f"{OPTIONS}, DataLoader({LOADER}), in a gloo group of {len(DATA_RANKS)} processes")
for r, batches in enumerate(ranks):
    print(f"rank {r} (data rank {DATA_RANKS[r]}): {short(batches)}")"""

READ_IN_PROCESSES = frozenset({"stream_agrees", "replicas_read_alike"})


def processes_script(plug: StreamPlug, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record`` (a flag of :data:`READ_IN_PROCESSES`), its ranks read in
    processes of their own; CannotReproduce says why not."""
    if not record.get("parameters"):
        raise CannotReproduce("it holds on no case in particular: no case to build")
    case = StreamCase.from_parameters(record["parameters"])
    refuse_at_the_edge(case.dataset_size, record["flag"])
    layout = mesh_layout(record)  # CannotReproduce for stream_agrees found on a mesh
    if layout is None:
        if plug.needs_process_group or plug.takes_mesh:
            raise CannotReproduce(
                "the dataset takes its rank from the process group or a device mesh: no process builds another rank's"
            )
        epochs = [None] * AGREES_EPOCHS if case.epoch is None else list(range(case.epoch, case.epoch + AGREES_EPOCHS))
        constants = {"AS_RANK": AS_RANK, "EPOCHS": epochs, "HASH_SEEDS": process_hash_seeds(case.world_size)}
        parts = (fresh_processes(), AGREES_READING, AGREES_MAIN, AGREES_PROMISE, AGREES_CODE, PROCESS_IMPORTS)
    else:
        if "(ReadEpochs" not in record["message"]:
            raise CannotReproduce(
                "its replicas read apart in a reading other than an epoch's, which a mesh script does not make yet"
            )
        constants = {}
        case = case.with_(epoch=_epoch_read(record, case))
        reading = Template(MESH_READING).substitute(mesh_values(layout))
        parts = (run_ranks(), reading, MESH_MAIN, MESH_PROMISE, APART, GROUP_IMPORTS)
    processes, reading, main, promise, code, more_imports = parts
    head = script_head(plug, record, filename, case, constants, ("atexit", "shutil", *more_imports))
    main = MAIN.format(reading=main, promise=promise, code=code, tail=tail(record, promise))
    return head + SCRIPT.format(processes=processes, reading=reading, main=guarded(main))


def _epoch_read(record: Mapping[str, Any], case: StreamCase) -> int | None:
    """The epoch whose reading the replicas differ in: the test's drawn epoch, or of the epochs it
    drew the one the message names ("epochs[1]..."); the case's own where it drew none."""
    drawn_epochs = drawn(record, "epochs") or [drawn(record, "epoch")]
    named = re.search(r"\bepochs\[(\d+)\]", record["message"])
    k = int(named.group(1)) if named else 0
    return drawn_epochs[k] if k < len(drawn_epochs) and drawn_epochs[k] is not None else case.epoch
