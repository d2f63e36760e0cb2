"""Known-bad samplers of a meshed job (``+mesh``, docs/meshes.md): each runs with data
parallelism as one dimension of a device mesh, and breaks what the mesh asks of it.

Imports nothing from the suite (see ``rejections.py``)."""

from __future__ import annotations

import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler

from .rejections import rejected


@rejected(
    "test_per_epoch_invariant",
    "replicas_read_alike",
    under="torch+mesh",
    whole_suite=True,
    sometimes={
        "equal_length": "where every rank of the group reads nothing (N < 4 with drop_last on a mesh of 4), the "
        "replicas agree, and the data ranks read floor(N/4) = 0 items each where floor(N/2) is promised"
    },
)
def ReadsTheGlobalRank(dataset, **options):
    """DistributedSampler built from the process group alone inside a meshed job: every rank
    takes its global rank and the global world size for its data rank and size, so the
    tensor-parallel ranks of one replica read different samples (DeepSpeed #99: a sampler
    built without num_replicas/rank under model parallelism; prime-rl #1305: a DataLoader
    given the world rank where context parallelism is on). In a plain group it conforms: the
    global rank is the data rank there."""
    return DistributedSampler(dataset, **options)


ReadsTheGlobalRank.needs_process_group = True  # type: ignore[attr-defined]  # read by the suite's plug


@rejected("test_per_epoch_invariant", "replicas_read_alike", under="torch+mesh", whole_suite=True)
def AssumesTensorParallelInnermost(dataset, num_replicas=None, rank=None, device_mesh=None, **options):
    """Given the job's mesh, takes the global rank divided by the tensor-parallel size for its
    data rank, as accelerate 1.15's ``prepare_data_loader(torch_device_mesh=...)`` does
    (``process_index // submesh_tp_size``, accelerate/data_loader.py): right while ``tp`` is the
    innermost dimension (dp2.tp2), wrong on a mesh that orders it otherwise (tp2.dp2), where the
    two ranks of one replica read two data ranks' shares. Without a mesh it conforms."""
    if device_mesh is not None:
        tensor_parallel = device_mesh["tp"].size() if "tp" in device_mesh.mesh_dim_names else 1
        num_replicas = dist.get_world_size() // tensor_parallel
        rank = dist.get_rank() // tensor_parallel
    return DistributedSampler(dataset, num_replicas=num_replicas, rank=rank, **options)
