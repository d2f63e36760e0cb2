"""Device meshes (``+mesh``, docs/meshes.md): a mesh's layout puts each global rank where
``init_device_mesh`` puts it; torch's DistributedSampler, built with the data coordinates,
holds every invariant of ``torch+mesh`` through the whole suite; the known-bad that takes the
global rank for its data rank fails exactly its invariants; a mesh that cannot be read is a
usage error that says how to write one."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from sampler_conformance.execution.mesh import MeshLayout, first_difference
from sampler_conformance.subjects import contract_named

from .catalogue import MESH_BAD, MESH_CONTRACT, MESH_WORLD_SIZES
from .suite_run import certify, certify_rejected

OPTIONS = (f"--contract={MESH_CONTRACT}", f"--world-sizes={MESH_WORLD_SIZES}")


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
    "text, refusal",
    [
        ("dp2.dp2", "names a dimension twice"),
        ("dp0.tp2", "is not a dimension's name and size"),
        ("dp2xtp2", "is not a dimension's name and size"),
    ],
)
def test_a_mesh_that_cannot_be_read_is_refused_saying_how_to_write_one(text, refusal):
    with pytest.raises(ValueError, match=refusal) as refused:
        MeshLayout.parse(text)
    assert "dp2.tp2" in str(refused.value)


def test_a_mesh_refused_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess(
        "-p", "sampler_conformance.plugin", f"--contract={MESH_CONTRACT}", "--meshes=tp2.pp2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = "\n".join(result.errlines)
    assert "--meshes='tp2.pp2': mesh 'tp2.pp2' has no data-parallel dimension" in errors, errors


def test_distributed_sampler_built_with_the_data_coordinates_holds_every_invariant_on_meshes(pytester):
    run = certify(pytester, "torch.utils.data.distributed:DistributedSampler", *OPTIONS, ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(MESH_CONTRACT).flags, run.explain()


@pytest.mark.parametrize("spec", list(MESH_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_mesh_bug_fails_exactly_its_invariants_in_the_whole_suite(pytester, spec):
    certify_rejected(pytester, spec, MESH_BAD[spec], *OPTIONS, ranks="all")


def test_replicas_that_read_apart_are_shown_where_their_replies_first_differ():
    @dataclass(frozen=True)
    class Reply:
        rank: int
        readings: dict[str, tuple[np.ndarray, ...]]

    ours = Reply(0, {"explicit": (np.array([0, 2]), np.array([1, 3]))})
    theirs = Reply(0, {"explicit": (np.array([0, 2]), np.array([3, 1]))})
    assert first_difference(ours, theirs) == ("readings[explicit][1]", [1, 3], [3, 1])
