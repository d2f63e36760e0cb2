"""Known-bad samplers, streams and data loaders of a meshed job (``+mesh``, docs/meshes.md): each runs with
data parallelism as one dimension of a device mesh, and breaks what the mesh asks of it.

Imports nothing from the suite (see ``rejections.py``) but the stream reference its stream
deviates from (``adapters/torch_iterable.py``), as ``streams_bad.py`` does, and the data loader
reference its loader is built on (``adapters/torch_loader.py``), as ``loader_bad.py`` does."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.utils.data import Sampler
from torch.utils.data.distributed import DistributedSampler

from sampler_conformance.adapters.torch_iterable import RankWorkerSplit
from sampler_conformance.adapters.torch_loader import DistributedLoader

from .rejections import rejected

# Why a sampler that counts 4 data ranks on a mesh of 4 may fail equal_length too.
READS_NOTHING = (
    "where every rank of the group reads nothing (N < 4 with drop_last on a mesh of 4), the replicas agree, and "
    "the data ranks read floor(N/4) = 0 items each where floor(N/2) is promised"
)


@rejected(
    "test_per_epoch_invariant",
    "replicas_read_alike",
    under="torch+mesh",
    whole_suite=True,
    sometimes={"equal_length": READS_NOTHING},
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


@rejected(
    "test_per_epoch_invariant",
    "replicas_read_alike",
    under="torch+mesh",
    whole_suite=True,
    sometimes={"equal_length": READS_NOTHING},
    meshes="dp2.cp2",
)
def CountsContextParallelAsData(dataset, num_replicas=None, rank=None, device_mesh=None, **options):
    """Given the job's mesh, counts every dimension but ``tp`` as data, so context- (and
    pipeline-) parallel ranks are handed data ranks of their own: the cp ranks of one replica
    read consecutive samples of the global order (prime-rl #1305: a DataLoader given the world
    rank where the data-parallel rank is meant, with context parallelism on). Right on meshes
    of dp and tp alone, the default's; wrong on one with a cp dimension (dp2.cp2)."""
    if device_mesh is not None:
        num_replicas, rank = 1, 0
        for name, coordinate in zip(device_mesh.mesh_dim_names, device_mesh.get_coordinate(), strict=True):
            if name != "tp":
                size = device_mesh[name].size()
                num_replicas, rank = num_replicas * size, rank * size + coordinate
    return DistributedSampler(dataset, num_replicas=num_replicas, rank=rank, **options)


@rejected(
    "test_per_epoch_invariant",
    "replicas_read_alike",
    under="valid,finite_epochs,exact_partition,deterministic,seed_effective+mesh",
    whole_suite=True,
)
class SeedMixesTheGlobalRank(Sampler[int]):
    """Splits one order, seeded by seed + epoch alike everywhere, among the data ranks it is
    given without padding (rank r takes every W-th from r), then shuffles its share again
    with a generator seeded by seed + epoch + the process's global rank: a local shuffle with
    a per-rank seed, harmless in a plain group, where the shares are disjoint. On a mesh the
    tensor-parallel ranks of one replica hold one share and shuffle it apart (the symptom of
    accelerate #3092, "Data on the same dp rank is inconsistent after prepare"; axolotl #3920
    seeds its DataLoader workers by the sequence-parallel group, where the global rank set the
    ranks of one group collating apart; Megatron-LM seeds its tensor-parallel RNG with
    seed + 2718 + the tp rank, model_parallel_cuda_manual_seed, so a shuffle drawn from it does
    the same). Without a process group (simulated ranks) it takes the rank it is given, the
    global rank of a plain job."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
        rank = dist.get_rank() if rank is None else rank
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.size, self.num_replicas, self.rank = len(dataset), num_replicas, rank
        self.global_rank = dist.get_rank() if dist.is_initialized() else rank
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0

    def __iter__(self):
        if not self.shuffle:
            return iter(range(self.rank, self.size, self.num_replicas))
        order = torch.randperm(self.size, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        share = order[self.rank :: self.num_replicas]
        local = torch.Generator().manual_seed(self.seed + self.epoch + self.global_rank)
        return iter(share[torch.randperm(len(share), generator=local)].tolist())

    def __len__(self):
        return len(range(self.rank, self.size, self.num_replicas))

    def set_epoch(self, epoch):
        self.epoch = epoch


# One mesh: a case set aside on it makes each test draw more, each through DataLoader workers on 4 ranks.
@rejected("test_stream_epoch", "replicas_read_alike", under="stream+mesh", whole_suite=True, meshes="tp2.dp2")
class SplitsByGlobalRankAndWorker(RankWorkerSplit):
    """Reads its rank from the process group, whatever it is told, and gives each (rank,
    worker) pair every P-th item of the epoch's order from its pair index, rank x workers +
    worker of P = world size x workers: on a mesh every tensor-parallel rank of a replica
    reads items of its own (mosaicml/streaming #597 added ``replication`` so that the ranks of
    one tensor- or sequence-parallel group read the same samples). In a plain group it conforms."""

    needs_process_group = True

    def __init__(self, dataset_size: int, rank: int, world_size: int, seed: int = 0, shuffle: bool = False) -> None:
        super().__init__(dataset_size, dist.get_rank(), dist.get_world_size(), seed, shuffle)

    def reader_items(self) -> list[int]:
        worker, workers = self.worker()
        return self.order()[self.rank * workers + worker :: self.world_size * workers]


@rejected("test_loader_epoch", "replicas_read_alike", under="data_loader+mesh", whole_suite=True, meshes="tp2.dp2")
def LoaderAssumesTensorParallelInnermost(
    dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed=0, device_mesh=None
):
    """``AssumesTensorParallelInnermost``'s arithmetic in a data loader that takes the job's mesh,
    as torchtitan's and olmo-core's trainers hand their loaders the data coordinates they read off
    their own mesh: the global rank divided by the ``tp`` size for its DP rank. Right on dp2.tp2; on
    tp2.dp2 the two ranks of one replica read two DP ranks' parts of each global batch, so the
    tensor-parallel shards of one model replica train on different instances. Without a mesh it
    is the reference."""
    if device_mesh is not None:
        tensor_parallel = device_mesh["tp"].size() if "tp" in device_mesh.mesh_dim_names else 1
        dp_world_size = dist.get_world_size() // tensor_parallel
        dp_rank = dist.get_rank() // tensor_parallel
    return DistributedLoader(
        dataset_size, dp_rank=dp_rank, dp_world_size=dp_world_size, global_batch_size=global_batch_size, seed=seed
    )
