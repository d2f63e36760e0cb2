"""Where a property's ranks run: a parameter the plugin generates, not a folder.

A certification test that takes the ``ranks`` fixture is written once, against the ``Ranks``
protocol (``harness.execution.scenario``). The plugin runs it once with every rank of a case
simulated in the sampler process (test id ``simulated``; each case draws its world size, as
``ranks.world_size`` is None) and once per world size of ``--world-sizes`` in a real process
group (ids ``W1``, ``W2``...; one process per rank, the case's world size the group's), so
``-k simulated`` or ``-k W2`` selects them. Under a contract ``+mesh``, once more per device mesh
of ``--meshes`` (ids ``mesh-dp2.tp2``...: a real group of the mesh's size, the case's world size
its data-parallel size; ``harness.execution.mesh``). Under torchrun the groups are the ranks torchrun
started. Where a test may run is its invariant's ``where`` (``harness.core.invariants``); a
test narrows that with its ``ranks`` marker: :data:`in_groups_only` and
:data:`through_loader_workers` (real DataLoader workers), :data:`simulated_only` (its
real-group counterpart reads what only real loaders have), :data:`groups_where_simulation_cannot`.

Each example in a real group is a round trip to every rank, so those variants draw fewer
examples (``profiles.group_examples``; ``profiles.worker_examples`` where DataLoader workers
start on every rank): :func:`variant_settings` gives each variant its own.

The group pools live for the whole session (a case costs a round trip, not a spawn) and are
closed at its end; ``harness.execution.rank_pool`` also closes them at interpreter exit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck

from sampler_conformance.core.evidence import not_applicable
from sampler_conformance.core.invariants import REGISTRY, Where
from sampler_conformance.execution.backend import cuda_device_count
from sampler_conformance.execution.mesh import MESH, DrawnMeshes, MeshLayout, MeshRanks
from sampler_conformance.execution.rank_pool import RankPool, RankPools
from sampler_conformance.execution.scenario import Ranks
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.execution.torchrun.pool import started_pools
from sampler_conformance.subjects import subject_of

from . import profiles
from .drawn_meshes import DrawnMeshRanks
from .folders import IN_PROCESS_DIR, PROCESS_GROUPS_DIR
from .options import option_named, setting
from .state import state

RANKS = "ranks"  # the fixture, and the marker that says where a test may run
RESIZED = "resized_ranks"  # the fixture of a run that changes its world size
SIMULATED_ID = "simulated"
NCCL_MARK = "nccl"

# The test only makes sense in real process groups: no simulated variant.
in_groups_only = pytest.mark.ranks(simulated=False)
# ...and it starts DataLoader workers on every rank, each example far dearer than a round trip.
through_loader_workers = pytest.mark.ranks(simulated=False, loader_workers=True)
# Judged on simulated ranks only: its real-group counterpart is another test, which reads what
# only real loaders have (persistent workers).
simulated_only = pytest.mark.ranks(groups=False)
# Judged on simulated ranks, cheaply; in real groups only for a subject that cannot run
# in-process (a dataset that takes its rank from the process group).
WHERE_SIMULATION_CANNOT = "where simulation cannot"
groups_where_simulation_cannot = pytest.mark.ranks(groups=WHERE_SIMULATION_CANNOT)


LEAST_WORLD_SIZE = "least_world_size"


def world_size_id(world_size: int) -> str:
    """``W2``: a test id that ``-k`` can select (its grammar has no ``=``)."""
    return f"W{world_size}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{RANKS}(simulated=True, groups=True, loader_workers=False): where a test taking the ranks fixture runs",
    )
    config.addinivalue_line(
        "markers", f"{NCCL_MARK}: needs one CUDA device per rank (NCCL); skipped with the reason elsewhere"
    )
    config.addinivalue_line(
        "markers",
        f"{LEAST_WORLD_SIZE}(n): a test taking world_size has no variant for fewer ranks (it has nothing to judge there)",
    )


def world_sizes_of(metafunc: pytest.Metafunc) -> list[int]:
    """The world sizes of a test's group variants: --world-sizes, less those below its
    ``least_world_size`` marker's, unless that leaves none (its body then says why it skips)."""
    sizes: list[int] = list(setting(metafunc.config, option_named("world-sizes")))
    marker = metafunc.definition.get_closest_marker(LEAST_WORLD_SIZE)
    if marker is None:
        return sizes
    return [w for w in sizes if w >= marker.args[0]] or sizes


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A variant per place the test's invariant may run (its declaration's ``where``), less
    those its ``ranks`` marker rules out: for ``ranks``, simulated and each world size; for
    ``resized_ranks``, simulated and each ordered pair of distinct world sizes."""
    placed = [name for name in (RANKS, RESIZED) if name in metafunc.fixturenames]
    if not placed:
        return
    invariant = metafunc.definition.get_closest_marker("invariant")
    where = REGISTRY[invariant.args[0]].where if invariant is not None and invariant.args[0] in REGISTRY else Where.BOTH
    marker = metafunc.definition.get_closest_marker(RANKS)
    said = marker.kwargs if marker is not None else {}
    simulated = where is not Where.GROUPS and said.get("simulated", True)
    in_groups = where is not Where.IN_PROCESS and said.get("groups", True)
    sizes: tuple[int, ...] = setting(metafunc.config, option_named("world-sizes")) if in_groups else ()
    params = [pytest.param(None, id=SIMULATED_ID)] if simulated else []
    if placed == [RANKS]:
        params += [pytest.param(w, id=world_size_id(w)) for w in sizes]
        drawn = hypothesis.is_hypothesis_test(metafunc.function)  # a fixed case has no draws to draw a mesh among
        meshes = [m for m in _meshes(metafunc.config) if drawn or not isinstance(m, DrawnMeshes)] if in_groups else []
        params += [pytest.param(mesh, id=f"mesh-{mesh.id}") for mesh in meshes]
    else:
        changes = [(old, new) for old in sizes for new in sizes if old != new]
        params += [pytest.param(change, id=f"{world_size_id(change[0])}to{change[1]}") for change in changes]
        if sizes and not changes:  # one world size: nothing to change to, said as a skip, never a silent pass
            skip = pytest.mark.skip(reason=f"a change of world size needs two sizes in --world-sizes (got {sizes})")
            params.append(pytest.param((sizes[0], sizes[0]), marks=skip, id=world_size_id(sizes[0])))
    metafunc.parametrize(placed[0], params, indirect=True)


def _meshes(config: pytest.Config) -> tuple[MeshLayout | DrawnMeshes, ...]:
    """The meshes of --meshes, where the contract promises +mesh; else none."""
    on_meshes = any(promise.name == MESH.name for promise in state(config).contract.composed_of)
    return state(config).options["meshes"] if on_meshes else ()


def group_sizes(config: pytest.Config) -> tuple[int, ...]:
    """The sizes of the real groups the run may start: each of --world-sizes, and each mesh's."""
    return tuple(sorted({*setting(config, option_named("world-sizes")), *(m.world_size for m in _meshes(config))}))


def mesh_of(item: pytest.Item) -> MeshLayout | DrawnMeshes | None:
    """The device mesh the item's ranks run on (or the meshes drawn for it), if they do."""
    placed = _placement(item)
    return placed if isinstance(placed, (MeshLayout, DrawnMeshes)) else None


def _placement(item: pytest.Item) -> Any:
    """The item's ``ranks`` or ``resized_ranks`` parameter (None: simulated; a world size, a
    pair of them, or a MeshLayout), or "folder" for a test without one."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name in (RANKS, RESIZED):
        if name in params:
            return params[name]
    return "folder"


def runs_in_process(item: pytest.Item) -> bool:
    """The item's ranks are simulated in the sampler process (else real groups, or not a certification test)."""
    placed = _placement(item)
    if placed == "folder":
        return Path(item.path).resolve().is_relative_to(IN_PROCESS_DIR)
    return placed is None


def runs_in_groups(item: pytest.Item) -> bool:
    placed = _placement(item)
    if placed == "folder":
        return Path(item.path).resolve().is_relative_to(PROCESS_GROUPS_DIR)
    return placed is not None


def left_out(item: pytest.Item) -> bool:
    """The item runs where ``--ranks`` rules out (``simulated``: no real group; ``groups``: only them)."""
    chosen = setting(item.config, option_named("ranks"))
    return (chosen == "simulated" and runs_in_groups(item)) or (chosen == "groups" and runs_in_process(item))


def variant_settings(item: pytest.Item, settings: hypothesis.settings) -> hypothesis.settings:
    """The Hypothesis settings of a test variant that takes ``ranks``: in a real group, fewer
    examples; in any, the function-scoped ``ranks`` fixture allowed (it is the same live pool
    or simulator for every example, and a fault quarantines the rest of one test only)."""
    if _placement(item) == "folder":
        return settings
    health = [*settings.suppress_health_check, HealthCheck.function_scoped_fixture]
    if not runs_in_groups(item):
        return hypothesis.settings(settings, suppress_health_check=health)
    marker = item.get_closest_marker(RANKS)
    workers = marker is not None and marker.kwargs.get("loader_workers", False)
    examples = profiles.worker_examples() if workers else profiles.group_examples()
    return hypothesis.settings(settings, max_examples=examples, suppress_health_check=health)


# ---- fixtures -------------------------------------------------------------------------


@pytest.fixture
def ranks(request: pytest.FixtureRequest) -> Ranks:
    """Who runs the test's cases: the simulator, or the live process group of the variant's
    world size (started on first use)."""
    if request.param is None:
        return SIMULATED
    marker = request.node.get_closest_marker(RANKS)
    fallback = marker is not None and marker.kwargs.get("groups") == WHERE_SIMULATION_CANNOT
    if fallback and not state(request.config).plug.needs_process_group:
        not_applicable(
            "judged on simulated ranks; real groups judge it only for a subject that takes its rank from the "
            "process group, which simulated ranks cannot run"
        )
    pools = request.getfixturevalue("rank_pools")
    if isinstance(request.param, MeshLayout):
        return MeshRanks.on(group_pool(request, pools, request.param.world_size), request.param)
    if isinstance(request.param, DrawnMeshes):
        return DrawnMeshRanks(group_pool(request, pools, request.param.world_size), request.param)
    return group_pool(request, pools, request.param)


@dataclass(frozen=True)
class ResizedRanks:
    """The ranks of a run that changes its world size: ``at(W)`` runs a scenario on W ranks.
    Simulated, at any world size (``sizes`` None: the test draws them); in real groups, the
    groups of one change (``sizes``: the old world size and the new)."""

    sizes: tuple[int, int] | None
    at: Callable[[int], Ranks]


@pytest.fixture
def resized_ranks(request: pytest.FixtureRequest) -> ResizedRanks:
    """The simulated ranks, or the live groups of the variant's two world sizes (each started on first use)."""
    if request.param is None:
        return ResizedRanks(None, lambda _: SIMULATED)
    pools = request.getfixturevalue("rank_pools")
    return ResizedRanks(request.param, cache(lambda world_size: group_pool(request, pools, world_size)))


@pytest.fixture(scope="session")
def rank_pools(pytestconfig: pytest.Config) -> Iterator[RankPools]:
    worker_modules = state(pytestconfig).plug.worker_modules
    started = started_pools(pytestconfig)
    if started is not None:  # rank 0 under torchrun: groups of its ranks (sampler_conformance.torchrun closes them)
        started.worker_modules = (
            worker_modules  # made by the torchrun plugin, which knows no plug: told before any group starts
        )
        yield started
        return
    pools = RankPools(timeout_s=setting(pytestconfig, option_named("rank-timeout")), worker_modules=worker_modules)
    yield pools
    pools.close()


def group_pool(request: pytest.FixtureRequest, pools: RankPools, world_size: int) -> RankPool:
    """The live group of ``world_size`` ranks on the backend asked for, probed and ready for a
    new test; a skip, with the reason, where that backend cannot run here."""
    requested = (
        "nccl" if request.node.get_closest_marker(NCCL_MARK) else setting(request.config, option_named("backend"))
    )
    choice = pools.choose(requested, world_size, cuda_device_count())
    if choice.name is None:
        pytest.skip(str(choice.skip_reason))
    pool = pools.get(world_size, choice.name)
    if state(request.config).plug.needs_process_group:  # the others are probed in-process
        probe(request.config, pool, world_size)
    pool.begin_test()  # after the probe: a case it hung on does not stop this test
    return pool


def probe(config: pytest.Config, ranks: Ranks, world_size: int = 1) -> None:
    """What the subject learns of the plug once per process before its first test draws a case
    (the index sampler: the seeds it accepts), on ``ranks``; a finding is reported once, with
    the next test's report."""
    current = state(config)
    subject = subject_of(current.contract)
    if subject.probe is None:
        return
    finding = subject.probe(ranks, current.plug, current.contract, world_size)
    if finding is not None:
        current.pending_findings.append(finding)
