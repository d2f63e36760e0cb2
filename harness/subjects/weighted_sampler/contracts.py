"""The weighted sampler's contracts.

``weighted`` is what a distributed weighted sampler owes a training loop when the weights
describe the whole dataset (catalyst's and Lightning's ``DistributedSamplerWrapper`` around a
``WeightedRandomSampler``, torchdata's weighted mixing): each rank draws ``num_samples``
indices per epoch, with replacement; the draws of all ranks together are draws of item ``i``
with probability ``w_i / sum(w)``; an item of weight 0 is never drawn; the ranks draw
different streams; the stream is a function of the seed and the epoch, and changes with
either.

``weighted_partition`` is what MONAI's ``DistributedWeightedRandomSampler`` promises: each rank
draws over its own partition of the data, the indices torch's ``DistributedSampler`` gives it
(shuffled by the seed and the epoch, padded to equal parts), by that partition's weights
normalised on their own. The draws of all ranks together then follow the weights only when
every partition carries the same total weight.

``weighted_without_replacement`` is what lhotse's ``WeightedSimpleCutSampler`` promises: all
ranks' draws of an epoch are distinct, W x num_samples items drawn one after another, each by
the weights of the items not yet drawn (successive sampling, ``torch.multinomial`` and
``numpy``'s ``choice`` with ``replace=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sampler_conformance.core.contracts import Contract, Promise


@dataclass(frozen=True, repr=False)
class WeightedContract(Contract):
    subject: ClassVar[str] = "weighted_sampler"
    # False: the ranks' draws of an epoch are distinct items, so at most N of them (the cases drawn keep that).
    replacement: bool = True
    # True: each rank draws over its own DistributedSampler partition, by the partition's weights.
    partitioned: bool = False


# The promises a weighted sampler's contract is composed of.
WEIGHTED_DRAWS = Promise("weighted_draws", "each rank draws num_samples valid indices per epoch, never one of weight 0")
RANKS_DRAW_APART = Promise("ranks_draw_apart", "the ranks' streams differ")
SEEDED_BY_EPOCH = Promise(
    "seeded_by_epoch", "the stream is a function of the seed and the epoch, and changes with either"
)
FOLLOWS_WEIGHTS = Promise(
    "follows_weights",
    "all ranks' draws together, with replacement, follow the weights over the whole dataset (statistical)",
    per_epoch=True,
)
FOLLOWS_PARTITION_WEIGHTS = Promise(
    "follows_partition_weights",
    "each rank's draws, with replacement, follow the weights of its own DistributedSampler partition, normalised "
    "(statistical)",
    facts=(("partitioned", True),),
    per_epoch=True,
)
WITHOUT_REPLACEMENT = Promise(
    "draws_without_replacement",
    "all ranks' draws of an epoch are W x num_samples distinct items, drawn one after another by the weights of "
    "those left: each item is among them as often as that successive sampling includes it (statistical)",
    facts=(("replacement", False),),
    per_epoch=True,
)

WEIGHTED = WeightedContract.of(
    (WEIGHTED_DRAWS, RANKS_DRAW_APART, SEEDED_BY_EPOCH, FOLLOWS_WEIGHTS),
    name="weighted",
    family="weighted sampler",
    description=(
        "each rank draws num_samples indices per epoch with replacement; all ranks' draws together follow the "
        "weights over the whole dataset (statistical, false alarm at most 1e-6 per certification); weight 0 "
        "never drawn; the ranks' streams differ; set by the seed and the epoch, and changed by either"
    ),
    reference="sampler_conformance.adapters.torch_weighted:make",
)

WEIGHTED_PARTITION = WeightedContract.of(
    (WEIGHTED_DRAWS, RANKS_DRAW_APART, SEEDED_BY_EPOCH, FOLLOWS_PARTITION_WEIGHTS),
    name="weighted_partition",
    family="weighted sampler",
    description=(
        "as weighted, except that each rank's draws follow the weights of its own DistributedSampler partition "
        "(shuffled by seed and epoch), normalised on their own (MONAI's DistributedWeightedRandomSampler)"
    ),
    reference="sampler_conformance.adapters.torch_weighted:make_partitioned",
)

WEIGHTED_WITHOUT_REPLACEMENT = WeightedContract.of(
    (WEIGHTED_DRAWS, SEEDED_BY_EPOCH, WITHOUT_REPLACEMENT),
    name="weighted_without_replacement",
    family="weighted sampler",
    description=(
        "each rank draws num_samples indices per epoch, all ranks' draws distinct: W x num_samples items drawn one "
        "after another by the weights of those left (successive sampling, lhotse's WeightedSimpleCutSampler); each "
        "item included as often as that promises (statistical, false alarm at most 1e-6 per certification); weight "
        "0 never drawn; set by the seed and the epoch, and changed by either"
    ),
    reference="sampler_conformance.adapters.torch_weighted:make_without_replacement",
)

CONTRACTS: dict[str, WeightedContract] = {
    c.name: c for c in (WEIGHTED, WEIGHTED_PARTITION, WEIGHTED_WITHOUT_REPLACEMENT)
}
