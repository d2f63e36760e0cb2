"""The part of a reproduction script (docs/reproductions.md) that puts its ranks on a device mesh,
for ``replicas_read_alike`` found on one (docs/meshes.md): the mesh the failing test's id names
(or, on meshes drawn for each example, the one its counterexample drew),
written in as ``MESH_SIZES``, ``MESH_NAMES`` and each global rank's data coordinate
(``DATA_RANKS``), and the promise asserted over every global rank's reading. Each subject's
script starts every rank of the mesh as a process of one gloo group (``repro_groups.py``), and its
``read_in_group`` builds the rank's ``init_device_mesh("cpu", MESH_SIZES,
mesh_dim_names=MESH_NAMES)`` and its sampler, stream or loader on it as the suite builds it there."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.execution.mesh import DRAWN_NOTE, DRAWN_PREFIX, MeshLayout

FLAG = "replicas_read_alike"
# A test's variant on a device mesh ("test_loader_epoch[mesh-tp2.dp2-loader_batch_ids]", pytest_plugin/ranks.py).
MESH_VARIANT = re.compile(r"\bmesh-([\w.]+)")
# How a replicas_read_alike message names its mesh ("... replica 0 of the mesh tp2.dp2 read differently").
MESH_NAMED = re.compile(r"of the mesh ([\w.]+) read differently")

# The job's mesh, a string.Template: mesh_values fills it in.
MESH = """MESH_SIZES, MESH_NAMES = $sizes, $names  # the job's device mesh
DATA_RANKS = $data_ranks  # each global rank's data-parallel coordinate, in range(W)"""

PROMISE = "the ranks of one data-parallel replica (one data coordinate of the mesh) read alike."
# Sets broken and shown from ``ranks``, every global rank's reading.
APART = (
    "replicas = {}\n"
    "for r, data_rank in enumerate(DATA_RANKS):\n"
    "    replicas.setdefault(data_rank, []).append(r)\n"
    "wrong = [(d, rs[0], r) for d, rs in replicas.items() for r in rs[1:] if ranks[r] != ranks[rs[0]]]\n"
    "broken = bool(wrong)\n"
    'shown = "; ".join(f"replica {d}: rank {a} read {short(ranks[a])}, rank {b} read {short(ranks[b])}" for d, a, b in wrong[:2])'
)


def mesh_layout(record: Mapping[str, Any]) -> MeshLayout | None:
    """The device mesh ``record``'s test ran on, for ``replicas_read_alike``: the one the test's id
    names, or, on meshes drawn anew for each example (``drawn4``), the one its counterexample drew
    (its "Draw (device mesh)" line); None for another flag found off a mesh. CannotReproduce for
    another flag found on a mesh, and where the record names no mesh a script can start."""
    named = MESH_VARIANT.search(str(record.get("test", "")))
    if record["flag"] != FLAG:
        if named:
            raise CannotReproduce(
                f"it was found in real process groups on the device mesh {named.group(1)}: a script starts a mesh "
                f"for {FLAG} only, not yet for {record['flag']}"
            )
        return None
    mesh = named.group(1) if named else ""
    drawn = [line.removeprefix(DRAWN_NOTE) for line in record.get("draws") or () if line.startswith(DRAWN_NOTE)]
    # A case set aside by another test keeps no draws: its message names the mesh (mesh.check_replicas_alike).
    drawn += MESH_NAMED.findall(str(record.get("message", "")))
    if mesh.startswith(DRAWN_PREFIX) and drawn:
        mesh = drawn[0]
    try:
        return MeshLayout.parse(mesh)
    except ValueError as unknown:
        raise CannotReproduce(f"its test names no device mesh a script can start: {unknown}") from None


def mesh_values(layout: MeshLayout) -> dict[str, Any]:
    """What :data:`MESH` names: ``layout``'s sizes, names and each global rank's data coordinate."""
    return {
        "sizes": layout.sizes,
        "names": layout.names,
        "data_ranks": [layout.data_rank(rank) for rank in range(layout.world_size)],
    }
