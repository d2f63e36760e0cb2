"""Device meshes (``+mesh``, docs/meshes.md): a mesh's layout puts each global rank where
``init_device_mesh`` puts it; torch's DistributedSampler and the stream reference, built
with the data coordinates, hold every invariant of ``torch+mesh`` and ``stream+mesh`` through
the whole suite; each known-bad of a meshed job fails exactly its invariants, under the
contract and on the meshes it declares; a mesh that cannot be read is a usage error that says
how to write one."""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import find, given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import SamplerFault
from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.execution.mesh import (
    DRAWN_NOTE,
    DRAWN_WORLD_SIZES,
    DataDimensions,
    DrawnMeshes,
    MeshLayout,
    check_replicas_alike,
    first_difference,
    parse_meshes,
)
from sampler_conformance.execution.scenario import CallWatch, MeshPlace, RankContext
from sampler_conformance.pytest_plugin.drawn_meshes import mesh_layouts
from sampler_conformance.report.counterexamples import shown_counterexamples
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.common.repro_mesh import mesh_layout
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC
from sampler_conformance.subjects.iterable_dataset.plug import DEFAULT_SPEC as STREAM_DEFAULT_SPEC
from sampler_conformance.subjects.iterable_dataset.plug import StreamPlug

from .catalogue import (
    MESH_BAD,
    MESH_CONTRACT,
    MESH_LOADER_BAD,
    MESH_LOADER_CONTRACT,
    MESH_LOCAL_SHUFFLE_BAD,
    MESH_STREAM_BAD,
    MESH_STREAM_CONTRACT,
    MESH_WORLD_SIZES,
)
from .reproduced import assert_reproduced
from .suite_run import PROPERTIES, certify, certify_rejected

# Every known-bad of a meshed job, each certified under the contract it declares.
MESH_BADS = {**MESH_BAD, **MESH_LOCAL_SHUFFLE_BAD, **MESH_STREAM_BAD, **MESH_LOADER_BAD}
# A known-bad's proof runs on the two fixed meshes unless it names its own (Rejection.meshes):
# each shows on one of them, and a drawn mesh costs the group a DeviceMesh per layout drawn.
FIXED_MESHES = "--meshes=dp2.tp2,tp2.dp2"
# The known-bads whose scripts the whole-suite proof checks, each with the reference its scripts hold for.
REPRODUCED_AGAINST = {
    **dict.fromkeys(MESH_BAD, DEFAULT_SPEC),
    **dict.fromkeys(MESH_LOADER_BAD, contract_named(MESH_LOADER_CONTRACT).reference),
    **dict.fromkeys(MESH_STREAM_BAD, contract_named(MESH_STREAM_CONTRACT).reference or STREAM_DEFAULT_SPEC),
}


@pytest.mark.parametrize("text", ["dp2.tp2", "tp2.dp2", "pp2.dp_shard2.tp2", "dp_replicate2.dp_shard2", "cp2.dp3"])
def test_a_layout_places_each_rank_where_init_device_mesh_does(text):
    layout = MeshLayout.parse(text)
    # init_device_mesh lays the global ranks out as arange(world).view(sizes): row-major.
    grid = torch.arange(layout.world_size).view(layout.sizes)
    for rank in range(layout.world_size):
        assert grid[layout.coordinates(rank)].item() == rank
    # A replica is the ranks that share the data dimensions' coordinates, data ranks counted
    # over the data dimensions outermost first.
    data_axes = [axis for axis, name in enumerate(layout.names) if name in layout.data_dims]
    for rank in range(layout.world_size):
        coordinates = layout.coordinates(rank)
        replica = layout.replicas[layout.data_rank(rank)]
        assert [[layout.coordinates(r)[a] for a in data_axes] for r in replica] == [
            [coordinates[a] for a in data_axes]
        ] * len(replica)
    assert sorted(r for replica in layout.replicas for r in replica) == list(range(layout.world_size))
    assert layout.id == text


@pytest.mark.parametrize(
    "text, refusal, example",
    [
        ("dp2.dp2", "names a dimension twice", "dp2.tp2"),
        ("dp0.tp2", "is not a dimension's name and size", "dp2.tp2"),
        ("dp2xtp2", "is not a dimension's name and size", "dp2.tp2"),
        ("drawn5", "meshes are drawn at a world size of 1, 2, 3, 4, 6, 8", "drawn4"),
    ],
)
def test_a_mesh_that_cannot_be_read_is_refused_saying_how_to_write_one(text, refusal, example):
    with pytest.raises(ValueError, match=refusal) as refused:
        parse_meshes(text)
    assert example in str(refused.value)


@given(data=st.data(), world_size=st.sampled_from(DRAWN_WORLD_SIZES))
def test_a_drawn_mesh_is_a_mesh_of_its_world_size_with_a_data_dimension(data, world_size):
    assert parse_meshes(f"drawn{world_size}") == DrawnMeshes(world_size)
    layout = data.draw(mesh_layouts(world_size))
    assert layout.world_size == world_size
    assert max(layout.sizes) <= 4 and layout.data_dims, layout.id
    assert MeshLayout.parse(layout.id) == layout


@pytest.mark.parametrize(
    "what, found",
    [
        ("tensor parallelism outermost", lambda layout: layout.names[0] == "tp"),
        ("context parallelism inside the data dimension", lambda layout: layout.names[-1] == "cp"),
        ("pipeline, data shard and tensor parallelism", lambda layout: set(layout.names) == {"pp", "dp_shard", "tp"}),
    ],
)
def test_drawn_meshes_reach_the_orders_and_dimensions_that_arithmetic_gets_wrong(what, found):
    assert found(find(mesh_layouts(8), found)), what


def test_a_mesh_refused_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess(
        "-p", "sampler_conformance.plugin", f"--contract={MESH_CONTRACT}", "--meshes=tp2.pp2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = "\n".join(result.errlines)
    assert "--meshes='tp2.pp2': mesh 'tp2.pp2' has no data-parallel dimension" in errors, errors


@pytest.mark.parametrize(
    "spec, contract, meshes",
    [
        ("torch.utils.data.distributed:DistributedSampler", MESH_CONTRACT, ()),
        # A stream's tests start DataLoader workers on every rank: one mesh (the drawn ones, each
        # a DeviceMesh more to build, are proven on DistributedSampler's run).
        ("sampler_conformance.adapters.torch_iterable:make", MESH_STREAM_CONTRACT, ("--meshes=tp2.dp2",)),
    ],
    ids=["DistributedSampler", "stream"],
)
def test_the_reference_built_with_the_data_coordinates_holds_every_invariant_on_meshes(
    pytester, spec, contract, meshes
):
    options = (f"--contract={contract}", f"--world-sizes={MESH_WORLD_SIZES}", *meshes)
    run = certify(pytester, spec, *options, ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(contract).flags, run.explain()


@pytest.mark.parametrize("spec", list(MESH_BADS), ids=lambda spec: spec.rpartition(":")[2])
def test_mesh_bug_fails_exactly_its_invariants_in_the_whole_suite(pytester, spec):
    rejection = MESH_BADS[spec]
    options = (f"--contract={rejection.under}", f"--world-sizes={MESH_WORLD_SIZES}")
    meshes = () if rejection.meshes else (FIXED_MESHES,)
    if spec not in REPRODUCED_AGAINST:
        certify_rejected(pytester, spec, rejection, *options, *meshes, ranks="all")
        return
    # An index sampler's, a stream's or a data loader's: its scripts start the mesh's processes to show replicas_read_alike.
    run = certify_rejected(pytester, spec, rejection, *options, *meshes, "--repro=on", ranks="all")
    assert_reproduced(run, REPRODUCED_AGAINST[spec], read_in_groups={"replicas_read_alike"})


def test_the_data_loader_reference_built_with_the_data_coordinates_reads_alike_on_a_mesh(pytester):
    """The mesh variants of the data loader's group tests alone: its known-bad's whole-suite run
    (LoaderAssumesTensorParallelInnermost, the reference on dp2.tp2) proves the rest."""
    options = (f"--contract={MESH_LOADER_CONTRACT}", "--meshes=tp2.dp2", "-k", "mesh")
    run = certify(
        pytester, "sampler_conformance.adapters.torch_loader:make", *options, ranks="groups", paths=(PROPERTIES,)
    )
    assert run.exit_code == pytest.ExitCode.OK and not run.failed_invariants, run.explain()
    assert run.statuses["replicas_read_alike"] == "held", run.explain()


def test_replicas_that_read_apart_are_shown_where_their_replies_first_differ():
    @dataclass(frozen=True)
    class Reply:
        rank: int
        readings: dict[str, tuple[np.ndarray, ...]]

    ours = Reply(0, {"explicit": (np.array([0, 2]), np.array([1, 3]))})
    theirs = Reply(0, {"explicit": (np.array([0, 2]), np.array([3, 1]))})
    assert first_difference(ours, theirs) == ("readings[explicit][1]", [1, 3], [3, 1])


def _stream_on(factory, mesh: MeshPlace | None):
    """The plug of a stream ``factory``, and rank 1 of 2 data ranks in group rank 3 of ``mesh``'s job."""
    plug = StreamPlug("spec", factory, None, frozenset())
    return plug, RankContext(1, 2, plug, CallWatch.create(multiprocessing), "gloo", mesh=mesh)


def test_a_factory_that_names_device_mesh_is_given_the_mesh_and_the_global_rank_on_a_mesh():
    def takes_the_mesh(dataset_size, *, rank, world_size, device_mesh=None): ...

    def takes_ranks(dataset_size, *, rank, world_size, **options): ...

    mesh = MeshPlace(group_rank=3, group_size=4, speakers=(0, 1), device_mesh="the DeviceMesh")
    plug, rank = _stream_on(takes_the_mesh, mesh)
    assert plug.placed(rank, 1, 2) == (3, 4, {"device_mesh": "the DeviceMesh"})
    assert plug.placed(rank, 0, 2) == (0, 2, {})  # another rank's dataset: its data coordinates
    plug, rank = _stream_on(takes_the_mesh, None)
    assert plug.placed(rank, 1, 2) == (1, 2, {})  # a plain group
    plug, rank = _stream_on(takes_ranks, mesh)  # **options is not given the mesh unasked
    assert plug.placed(rank, 1, 2) == (1, 2, {})


def test_a_stream_that_takes_the_mesh_finds_its_data_coordinates_there(pytester):
    run = certify(
        pytester,
        "sampler_conformance.adapters.torch_iterable:make_on_mesh",
        "--contract=stream+mesh",
        "--meshes=tp2.dp2",
        "-k",
        "test_stream_epoch and mesh",
        ranks="groups",
        paths=(PROPERTIES,),
    )
    # Its replicas read alike on every request, and its data ranks each item once: the mesh
    # reached it (given data coordinates, or none, make_on_mesh reads the same; the unit test
    # above holds placed() to giving the mesh).
    assert run.exit_code == pytest.ExitCode.OK and not run.failed_invariants, run.explain()
    assert run.statuses["replicas_read_alike"] == "held", run.explain()


def test_a_counterexample_on_a_drawn_mesh_names_its_mesh_in_the_summary():
    record = {
        "title": "the ranks of one data-parallel replica read alike",
        "message": "the ranks of data-parallel replica 0 read differently",
        "case": "N=2, W=2",
        "test": "test_per_epoch_invariant[mesh-drawn4-covers-keep_last]",
        "draws": [f"{DRAWN_NOTE}dp2.cp2", "Draw 1 (N (dataset size)): 2"],
    }
    shown = shown_counterexamples([record], "", "the certificate", whole=False)
    assert shown[1] == "  N=2, W=2 (test_per_epoch_invariant[mesh-drawn4-covers-keep_last], on mesh dp2.cp2)"


def test_a_script_starts_the_mesh_its_test_named_or_its_counterexample_drew():
    flag = "replicas_read_alike"
    named = {"flag": flag, "test": "test_per_epoch_invariant[mesh-tp2.dp2-covers]", "draws": []}
    drawn = {
        "flag": flag,
        "test": "test_stream_epoch[mesh-drawn4-exactly_once]",
        "draws": [f"{DRAWN_NOTE}tp2.dp_replicate2"],
    }
    assert mesh_layout(named) == MeshLayout.parse("tp2.dp2")
    assert mesh_layout(drawn) == MeshLayout.parse("tp2.dp_replicate2")
    # A case another test set aside keeps no draws: the check's message names the mesh.
    set_aside = {**drawn, "draws": [], "message": _replicas_apart(MeshLayout.parse("tp2.dp_replicate2"))}
    assert mesh_layout(set_aside) == MeshLayout.parse("tp2.dp_replicate2")
    assert mesh_layout({"flag": "covers", "test": "test_per_epoch_invariant[W2-covers]"}) is None
    with pytest.raises(CannotReproduce, match="names no device mesh"):
        mesh_layout({**drawn, "draws": []})


def _replicas_apart(layout: MeshLayout) -> str:
    """The message check_replicas_alike raises where the ranks of replica 0 read differently."""
    scenario: Any = SimpleNamespace(case=None)  # the check reads only the scenario's case and type
    with pytest.raises(SamplerFault) as raised:
        check_replicas_alike(layout, scenario, [[rank] for rank in range(layout.world_size)])
    return raised.value.violations[0].message


def test_the_data_dimensions_are_those_data_dims_names():
    lightning = DataDimensions.parse("data_parallel")
    layout = MeshLayout.parse("data_parallel2.tensor_parallel2", lightning)
    assert layout.data_dims == ("data_parallel",) and layout.replicas == ((0, 1), (2, 3))
    assert MeshLayout.parse("pp2.dp_replicate2.dp_shard2").data_dims == ("dp_replicate", "dp_shard")  # dp*, the default
    assert not DataDimensions.parse("dp*,cp").carries("tp") and DataDimensions.parse("dp*,cp").carries("cp")
    with pytest.raises(ValueError, match="--data-dims=dp\\*"):
        MeshLayout.parse("data_parallel2.tensor_parallel2")
    with pytest.raises(ValueError, match="e.g. dp\\* or data_parallel"):
        DataDimensions.parse("data parallel")
