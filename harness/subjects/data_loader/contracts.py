"""The data loader's contracts.

``data_loader`` is what a pretraining framework's data loader owes a training loop under DDP
(ai2-olmo-core's ``DataLoaderBase`` family, torchtitan's ``ParallelAwareDataloader``,
Megatron's pretraining loader): the loader owns the sampling and the batching, and rank r of
W reads its part of each global batch of ``global_batch_size`` instances. Every instance of
the epoch is in exactly one rank's batch, but an incomplete final global batch, which is left
out; each rank's batch holds ``global_batch_size // W`` instances; every rank reads the same
number of batches; the batches are set by the seed and the epoch, and the epoch hook
(``reshuffle(epoch)`` or ``set_epoch(epoch)``) changes them.

``+elastic`` adds the promise these loaders exist for: the global batches do not depend on the
data-parallel world size, so a run can go on with another number of ranks (olmo-core builds its
global instance order from the seed and the epoch alone). This first slice judges the same
global batches at DP sizes 1, 2 and 4; a resume on another DP size comes with ``+resumable``.

Judged on simulated ranks in-process in this slice; lock-step reading in real process groups,
loader workers and resumes come later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sampler_conformance.core.contracts import Contract, Extension, Promise

# Parameters of the calling convention a loader lacks nothing without: a workdir is offered to a
# loader that writes files; workers are 0 in this slice (real loader workers come later).
NOT_NEEDED = frozenset({"workdir", "num_workers"})


@dataclass(frozen=True, repr=False)
class LoaderContract(Contract):
    subject: ClassVar[str] = "data_loader"

    def ignores(self, parameter: str) -> bool:
        return parameter in NOT_NEEDED


# The promises a data loader's contract is composed of.
LOADER_RUNS = Promise("loader_runs", "runs every valid case, each batch carrying the ids of its instances, in range(N)")
EACH_INSTANCE_ONCE = Promise(
    "each_instance_once",
    "each instance in exactly one rank's batch per epoch, but an incomplete final global batch, left out",
    per_epoch=True,
)
RANK_SHARE = Promise("rank_share", "each rank's batch is the global batch divided by the DP size")
EQUAL_BATCHES = Promise("loader_equal_batches", "every rank the same number of batches per epoch")
SEED_AND_EPOCH = Promise(
    "seed_and_epoch", "the same batches for the same seed and epoch, other batches after the epoch hook"
)

DATA_LOADER = LoaderContract.of(
    (LOADER_RUNS, EACH_INSTANCE_ONCE, RANK_SHARE, EQUAL_BATCHES, SEED_AND_EPOCH),
    name="data_loader",
    family="data-parallel data loader",
    description=(
        "each instance of an epoch in exactly one rank's batch, an incomplete final global batch left out; each "
        "rank's batch global_batch_size // W instances; every rank the same number of batches; set by the seed and "
        "the epoch, other batches after reshuffle(epoch) or set_epoch(epoch)"
    ),
    reference="sampler_conformance.adapters.torch_loader:make",
)

SAME_GLOBAL_BATCHES = Extension(
    name="elastic",
    description="the global batches do not depend on the data-parallel world size: the same instances in global "
    "batch g at DP sizes 1, 2 and 4 (a resume on another DP size comes with +resumable, in a later slice)",
)

CONTRACTS: dict[str, LoaderContract] = {DATA_LOADER.name: DATA_LOADER}
EXTENSIONS: dict[str, Extension] = {SAME_GLOBAL_BATCHES.name: SAME_GLOBAL_BATCHES}
