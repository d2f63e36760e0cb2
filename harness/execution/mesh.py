"""Device meshes: ranks on which data parallelism is one dimension of several.

A large job's ranks sit on a device mesh, say ``(dp, tp)`` or ``(pp, dp_shard, cp, tp)``. Its
input pipeline must follow two rules nothing in torch checks: the ranks of one data-parallel
replica (the same coordinates on the data dimensions, any on the others) read the same batches
in lock step, and the data coordinates together read what the contract promises for W = the
data-parallel size.

:class:`MeshLayout` is a mesh's named dimensions, outermost first, with global ranks laid out
on it as ``init_device_mesh`` lays them (row-major: the last dimension varies fastest).
:class:`MeshRanks` runs a scenario on a real group of ``layout.world_size`` processes. Each
process builds the ``DeviceMesh`` once per layout and runs the scenario as its data
coordinate of the data size (:class:`OnMesh`): a sampler built the way the suite builds it is
given ``num_replicas`` = the data-parallel size and ``rank`` = its data coordinate, and one
that reads the process group gets the global rank and world size, as in a job. The suite's
own collectives span the whole group, as a training step's do. The replicas' replies are
compared here on every request (``replicas_read_alike``); one reply per data coordinate goes
back to the test, which judges it as it judges any group's (docs/meshes.md).
"""

from __future__ import annotations

import math
import pickle
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np

from sampler_conformance.core.contracts import Extension
from sampler_conformance.core.evidence import SamplerFault, Violation
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .scenario import MeshPlace, RankContext, Scenario, StepFailed

# The dimensions that carry data, unless a run says otherwise (--data-dims): dp, dp_replicate, dp_shard.
DEFAULT_DATA_DIMS = "dp*"
_DIMENSION = re.compile(r"([a-z][a-z_]*?)_?(\d+)")
_DATA_PATTERN = re.compile(r"[a-z][a-z_]*\*?")


@dataclass(frozen=True)
class DataDimensions:
    """Which of a mesh's dimensions carry data: names, and prefixes written with a ``*``
    (``dp*``: dp, dp_replicate, dp_shard; ``data_parallel``: Lightning's)."""

    patterns: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> DataDimensions:
        """``dp*`` or ``data_parallel,dp*``; raises ValueError, saying how to write one."""
        patterns = tuple(part.strip() for part in text.split(",") if part.strip())
        if not patterns or not all(_DATA_PATTERN.fullmatch(p) for p in patterns):
            raise ValueError(
                f"{text!r} is not a list of dimension names, each maybe ending * for a prefix: e.g. "
                f"{DEFAULT_DATA_DIMS} or data_parallel"
            )
        return cls(patterns)

    def carries(self, name: str) -> bool:
        return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in self.patterns)

    def __str__(self) -> str:
        return ",".join(self.patterns)


DATA_DIMS = DataDimensions.parse(DEFAULT_DATA_DIMS)
LAYOUT_SYNTAX = (
    "dimensions outermost first, each a name and its size, joined by dots: dp2.tp2, pp2.dp_shard2.tp2; or drawn4, "
    "meshes of 4 ranks drawn anew for each example"
)


@dataclass(frozen=True)
class MeshLayout:
    """A mesh's named dimensions, outermost first, and which of them carry data."""

    dims: tuple[tuple[str, int], ...]
    data_dims: tuple[str, ...]

    @classmethod
    def parse(cls, text: str, data: DataDimensions = DATA_DIMS) -> MeshLayout:
        """``dp2.tp2`` -> dp of 2, then tp of 2; the dimensions ``data`` names carry data (by
        default those named ``dp...``). Raises ValueError, saying how to write one, for anything else."""
        dims = []
        for part in text.strip().split("."):
            match = _DIMENSION.fullmatch(part.strip())
            if match is None or int(match.group(2)) < 1:
                raise ValueError(f"mesh {text!r}: {part!r} is not a dimension's name and size; write {LAYOUT_SYNTAX}")
            dims.append((match.group(1), int(match.group(2))))
        names = [name for name, _ in dims]
        if len(set(names)) != len(names):
            raise ValueError(f"mesh {text!r} names a dimension twice; write {LAYOUT_SYNTAX}")
        data_dims = tuple(name for name in names if data.carries(name))
        if not data_dims:
            raise ValueError(
                f"mesh {text!r} has no data-parallel dimension (one that --data-dims={data} names); write "
                f"{LAYOUT_SYNTAX}, or say which dimensions carry data with --data-dims"
            )
        return cls(tuple(dims), data_dims)

    @property
    def id(self) -> str:
        """``dp2.tp2``: what ``parse`` reads, and the test id's part (``-k`` can select it)."""
        return ".".join(f"{name}{size}" for name, size in self.dims)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.dims)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(size for _, size in self.dims)

    @property
    def world_size(self) -> int:
        return math.prod(self.sizes)

    @property
    def data_size(self) -> int:
        return math.prod(size for name, size in self.dims if name in self.data_dims)

    def coordinates(self, rank: int) -> tuple[int, ...]:
        """The global ``rank``'s coordinate on each dimension (row-major, as init_device_mesh)."""
        coordinates = []
        for size in reversed(self.sizes):
            rank, coordinate = divmod(rank, size)
            coordinates.append(coordinate)
        return tuple(reversed(coordinates))

    def data_rank(self, rank: int) -> int:
        """The global ``rank``'s data coordinate: its data dimensions' coordinates, outermost first."""
        data_rank = 0
        for (name, size), coordinate in zip(self.dims, self.coordinates(rank), strict=True):
            if name in self.data_dims:
                data_rank = data_rank * size + coordinate
        return data_rank

    @cached_property
    def replicas(self) -> tuple[tuple[int, ...], ...]:
        """The global ranks of each data coordinate's replica, in data-rank order."""
        members: list[list[int]] = [[] for _ in range(self.data_size)]
        for rank in range(self.world_size):
            members[self.data_rank(rank)].append(rank)
        return tuple(tuple(group) for group in members)

    def describe(self, rank: int) -> str:
        """``rank 3 (dp=1, tp=1)``."""
        at = ", ".join(f"{name}={c}" for name, c in zip(self.names, self.coordinates(rank), strict=True))
        return f"rank {rank} ({at})"


# The largest dimension a drawn mesh has, and the world sizes it can be drawn at (products of
# dimensions of 2 to 4 ranks each, up to 8 ranks in all).
MOST_RANKS_PER_DIMENSION = 4
DRAWN_PREFIX = "drawn"
DRAWN_WORLD_SIZES = (1, 2, 3, 4, 6, 8)
# How a drawn mesh is shown with its counterexample, as Hypothesis shows its other draws.
DRAWN_NOTE = "Draw (device mesh): "


@dataclass(frozen=True)
class DrawnMeshes:
    """``drawn4``: a mesh of ``world_size`` ranks whose dimensions, their sizes and their order
    Hypothesis draws anew for every example (``harness.pytest_plugin.drawn_meshes``)."""

    world_size: int

    @classmethod
    def parse(cls, text: str) -> DrawnMeshes | None:
        """``drawn4`` -> meshes of 4 ranks; None for a text of another kind. Raises ValueError
        for a world size no mesh of dimensions of at most 4 ranks makes."""
        if not text.strip().startswith(DRAWN_PREFIX):
            return None
        size = text.strip().removeprefix(DRAWN_PREFIX)
        if not size.isdigit() or int(size) not in DRAWN_WORLD_SIZES:
            sizes = ", ".join(map(str, DRAWN_WORLD_SIZES))
            raise ValueError(f"mesh {text!r}: meshes are drawn at a world size of {sizes} (e.g. {DRAWN_PREFIX}4)")
        return cls(int(size))

    @property
    def id(self) -> str:
        return f"{DRAWN_PREFIX}{self.world_size}"


def parse_meshes(text: str, data: DataDimensions = DATA_DIMS) -> MeshLayout | DrawnMeshes:
    """A layout (``dp2.tp2``, its data dimensions those ``data`` names) or meshes drawn at a world
    size (``drawn4``, which name their dimensions themselves, the data ones ``dp...``)."""
    return DrawnMeshes.parse(text) or MeshLayout.parse(text, data)


# A mesh's device meshes, built once per layout in each rank process (a group rebuilt after a
# fault is new processes, which build theirs again).
_DEVICE_MESHES: dict[MeshLayout, Any] = {}


def device_mesh(layout: MeshLayout, backend: str | None) -> Any:
    """This process's ``DeviceMesh`` of ``layout`` over the default group (built on first use:
    one new group per dimension, a collective every rank joins)."""
    if layout not in _DEVICE_MESHES:
        from torch.distributed.device_mesh import init_device_mesh

        device = "cuda" if backend == "nccl" else "cpu"
        _DEVICE_MESHES[layout] = init_device_mesh(device, layout.sizes, mesh_dim_names=layout.names)
    return _DEVICE_MESHES[layout]


@dataclass(frozen=True)
class OnMesh(Scenario):
    """``inner`` run by one rank of a mesh, as its data coordinate of the data size."""

    inner: Scenario
    layout: MeshLayout

    @property
    def noun(self) -> str:  # type: ignore[override]  # the inner scenario's: "the dataset raised ..."
        return self.inner.noun

    @classmethod
    def of(cls, inner: Scenario, layout: MeshLayout) -> OnMesh:
        return cls(inner.spec, inner.contract, inner.case, inner, layout)

    def load(self) -> Any:
        return self.inner.load()

    def run(self, rank: RankContext) -> Any:
        layout = self.layout
        place = MeshPlace(
            group_rank=rank.rank,
            group_size=rank.world_size,
            speakers=tuple(replica[0] for replica in layout.replicas),
            device_mesh=device_mesh(layout, rank.backend),
        )
        data = RankContext(
            layout.data_rank(rank.rank),
            layout.data_size,
            rank.plug,
            rank.watch,
            rank.backend,
            noun=rank.noun,
            mesh=place,
        )
        try:
            return self.inner.run(data)
        except StepFailed as exc:  # named by its place on the mesh, not only its data coordinate
            raise StepFailed(
                rank.rank, exc.flag, f"{exc.summary} (on {layout.describe(rank.rank)})", exc.sampler_frames
            ) from (exc.__cause__ or exc)
        finally:
            rank.epoch = data.epoch


MESH = Extension(
    name="mesh",
    description="on a device mesh of which data parallelism is one dimension of several (--meshes): the ranks "
    "of one data-parallel replica read alike, and the data coordinates read what the base contract "
    "promises for W = the data-parallel size (docs/meshes.md)",
)
# The invariants checked on every request of a mesh, each declared on its check.
DECLARED = Declared()


@DECLARED(
    Invariant(
        "replicas_read_alike",
        "the ranks of one data-parallel replica read alike",
        "tensor-, context- or pipeline-parallel ranks of one replica trained on different samples: a sampler "
        "or dataset that takes the global rank for its data rank (DeepSpeed #99, prime-rl #1305)",
        "selftests.corpus.mesh_bad:ReadsTheGlobalRank",
        proven_under="torch+mesh",
        where=Where.MESH,
        promised_by=(MESH,),
    )
)
def check_replicas_alike(layout: MeshLayout, scenario: Scenario, replies: list[Any]) -> None:
    """Raises a fault of ``replicas_read_alike`` where a replica's ranks replied differently to
    ``scenario`` (compared as pickles: the same reply pickles the same), naming the first part
    of the replies that differs."""
    for data_rank, replica in enumerate(layout.replicas):
        first, *others = replica
        expected = pickle.dumps(replies[first])
        differ = [rank for rank in others if pickle.dumps(replies[rank]) != expected]
        if differ:
            rank = differ[0]
            where, theirs, ours = first_difference(replies[first], replies[rank])
            message = (
                f"the ranks of data-parallel replica {data_rank} of the mesh {layout.id} read differently "
                f"({type(scenario).__name__}"
                f"{', ' + where if where else ''}): {layout.describe(first)} read {_shown(theirs)}, "
                f"{layout.describe(rank)} read {_shown(ours)}"
            )
            raise SamplerFault([Violation("replicas_read_alike", message)], scenario.case)


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any]:
    """Where two replies first differ, walking dataclasses, mappings and sequences alike (an
    array as its list): the path to it and the two parts there."""
    if is_dataclass(a) and type(a) is type(b):
        for f in fields(a):
            if pickle.dumps(getattr(a, f.name)) != pickle.dumps(getattr(b, f.name)):
                return first_difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}".lstrip("."))
    if isinstance(a, Mapping) and isinstance(b, Mapping) and a.keys() == b.keys():
        for key in a:
            if pickle.dumps(a[key]) != pickle.dumps(b[key]):
                named = getattr(key, "name", key)
                return first_difference(a[key], b[key], f"{path}[{named}]")
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return path, a.tolist(), b.tolist()
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            if pickle.dumps(x) != pickle.dumps(y):
                return first_difference(x, y, f"{path}[{k}]")
    return path, a, b


SHOWN_CHARS = 240


def _shown(part: Any) -> str:
    text = repr(part)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}..."


class MeshRanks:
    """The ranks of a real group laid out on a mesh: each scenario runs on every rank as its data
    coordinate; the test gets one reply per data coordinate, once every replica's agree."""

    def __init__(self, pool: Any, layout: MeshLayout) -> None:
        self.pool = pool  # a RankPool of layout.world_size ranks
        self.layout = layout

    @classmethod
    @cache
    def on(cls, pool: Any, layout: MeshLayout) -> MeshRanks:
        """One per pool and mesh, for the session: replies are kept per ranks (``scenario.ask``)."""
        return cls(pool, layout)

    @property
    def world_size(self) -> int:
        return self.layout.data_size

    @property
    def group_is_data_parallel(self) -> bool:
        return False

    @property
    def answering(self) -> MeshRanks:
        return self

    def request(self, scenario: Scenario) -> list[Any]:
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        replies = self.pool.request(OnMesh.of(scenario, self.layout))
        check_replicas_alike(self.layout, scenario, replies)
        return [replies[replica[0]] for replica in self.layout.replicas]

    def __repr__(self) -> str:  # as a counterexample's "Falsifying example" names it
        return f"<mesh {self.layout.id} over {self.pool!r}>"
