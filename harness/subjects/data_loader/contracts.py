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
global instance order from the seed and the epoch alone): the same global batches at DP sizes
1, 2 and 4.

``+resumable`` is the loader's own checkpoint, by batch count: ``state_dict()`` after k
batches, ``load_state_dict(state)`` into a fresh loader, and it goes on with batch k + 1.
Beside ``+elastic`` (``data_loader+elastic+resumable``) the two promise a resume on another
DP size too: rank 0's state, loaded into every rank of the new size, goes on with the same
global batches.

What one epoch of every rank shows, the epoch order and a resume on the same DP size are judged
on simulated ranks and in real process groups (an epoch read in lock step); the DP-size promises
on simulated ranks (docs/data-loaders.md, "Where the ranks run").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sampler_conformance.core.contracts import Contract, Extension, Promise

# Parameters of the calling convention a loader lacks nothing without: a workdir is offered to a
# loader that writes files; workers are drawn for a loader that starts them.
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
    "batch g at DP sizes 1, 2 and 4 (with +resumable, a resume on another DP size too)",
)

RESUMED_ON_OTHER_DP_SIZE = Promise(
    "resumed_on_other_dp_size",
    "a checkpoint taken after k global batches at DP size W1 goes on at DP size W2 (W1, W2 in 1, 2, 4) with the "
    "same global batches, k + 1 onward: rank 0's state_dict() is loaded into every new rank (olmo-core's "
    "checkpointer falls back to rank 0's state on another world size), so the state must be global: global "
    "batches or instances processed, not this rank's",
)

RESUMABLE = Extension(
    name="resumable",
    description="the loader's own checkpoint resumes by batch count: state_dict() taken after k batches of an "
    "epoch, a fresh loader built with the same arguments, given its epoch hook and load_state_dict(state) (in "
    "either order), goes on with batch k + 1 exactly, to the end of the epoch; the epoch after it is the "
    "uninterrupted run's; and the state is plain data, which torch.load(weights_only=True) loads once "
    "torch.save saved it (docs/data-loaders.md, 'Resume')",
    beside=((SAME_GLOBAL_BATCHES.name, RESUMED_ON_OTHER_DP_SIZE),),
)

CONTRACTS: dict[str, LoaderContract] = {DATA_LOADER.name: DATA_LOADER}
EXTENSIONS: dict[str, Extension] = {e.name: e for e in (SAME_GLOBAL_BATCHES, RESUMABLE)}
