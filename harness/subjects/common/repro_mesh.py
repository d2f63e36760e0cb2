"""The part of a reproduction script (docs/reproductions.md) that reads the ranks of a device mesh
(docs/meshes.md), for ``replicas_read_alike`` found on the mesh the failing test named: every
global rank a process of one gloo group (``repro_groups.RUN_RANKS``) that builds
``init_device_mesh("cpu", MESH_SIZES, mesh_dim_names=MESH_NAMES)`` and reads its rank as the
suite reads it there; the promise is then asserted over the readings: the ranks of each
data-parallel replica read alike. Each subject writes its own ``read_in_group`` after
:data:`MESH_CONSTANTS` (a ``string.Template``, filled in by :func:`on_mesh`), and puts
:data:`CHECK` under :data:`PROMISE`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.execution.mesh import DRAWN_NOTE, DRAWN_PREFIX, MeshLayout

# A test's variant on a device mesh ("test_per_epoch_invariant[mesh-dp2.tp2-...]", pytest_plugin/ranks.py).
MESH_VARIANT = re.compile(r"\bmesh-([\w.]+)")

MESH_CONSTANTS = """MESH_SIZES, MESH_NAMES = $sizes, $names  # the job's device mesh
DATA_RANKS = $data_ranks  # each global rank's data-parallel coordinate (W of them)"""
# What every rank's process builds before it reads (torch imported).
INIT_MESH = 'torch.distributed.device_mesh.init_device_mesh("cpu", MESH_SIZES, mesh_dim_names=MESH_NAMES)'

PROMISE = "the ranks of one data-parallel replica (one data coordinate of the mesh) read alike."
# Sets broken and shown over ``ranks``, each global rank's reading.
CHECK = (
    "replicas = {}\n"
    "for r, data_rank in enumerate(DATA_RANKS):\n"
    "    replicas.setdefault(data_rank, []).append(r)\n"
    "wrong = [(d, rs[0], r) for d, rs in replicas.items() for r in rs[1:] if ranks[r] != ranks[rs[0]]]\n"
    "broken = bool(wrong)\n"
    'shown = "; ".join(f"replica {d}: rank {a} read {short(ranks[a])}, rank {b} read {short(ranks[b])}" for d, a, b in wrong[:2])'
)


def named_mesh(record: Mapping[str, Any]) -> str | None:
    """The mesh the failing test ran on: the one its id names (``dp2.tp2``), or, on meshes drawn
    anew for each example (``drawn4``), the one its counterexample drew (its "Draw (device mesh)"
    line); None: it was not found on a mesh."""
    found = MESH_VARIANT.search(str(record.get("test", "")))
    if found is None:
        return None
    drawn = [line.removeprefix(DRAWN_NOTE) for line in record.get("draws") or () if line.startswith(DRAWN_NOTE)]
    return drawn[0] if found.group(1).startswith(DRAWN_PREFIX) and drawn else found.group(1)


def mesh_layout(record: Mapping[str, Any]) -> MeshLayout:
    """The layout of the mesh ``record`` was found on (:func:`named_mesh`); CannotReproduce where
    it names none a script can start."""
    try:
        return MeshLayout.parse(named_mesh(record) or "")
    except Exception as unknown:
        raise CannotReproduce(f"its test names no device mesh a script can start: {unknown}") from None


def on_mesh(reading: str, layout: MeshLayout) -> str:
    """``reading`` (a ``string.Template`` that starts with :data:`MESH_CONSTANTS`) for ``layout``:
    its sizes, names and each global rank's data coordinate."""
    values = {
        "sizes": layout.sizes,
        "names": layout.names,
        "data_ranks": [layout.data_rank(rank) for rank in range(layout.world_size)],
    }
    return Template(reading).substitute(values)
