"""The weighted sampler's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad sampler of ``selftests/corpus/weighted_bad.py`` that reproduces the
bug it guards against; ``selftests/test_weighted.py`` certifies each and asserts its exact
set of failed invariants.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

_BAD = "selftests.corpus.weighted_bad"
_WEIGHTED = "weighted"


def _declared(flag: str, title: str, guards: str, bad: str, where: Where = Where.IN_PROCESS, **more) -> Invariant:
    return Invariant(flag, title, guards, f"{_BAD}:{bad}", proven_under=_WEIGHTED, where=where, **more)


DECLARED: tuple[Invariant, ...] = (
    _declared(
        "weighted_runs",
        "the sampler runs without crashing",
        "samplers that raise on few items, many draws or zero weights (torch.multinomial without replacement "
        "refuses more draws than items)",
        "WithoutReplacement",
        judged_from=0,  # an empty epoch can crash too
    ),
    _declared(
        "drawn_indices",
        "draws are int indices",
        "draws yielded as tensors or floats, which a DataLoader's dataset may index wrongly or refuse",
        "TensorDraws",
        Where.BOTH,
    ),
    _declared(
        "zero_weight_never_drawn",
        "an item of weight 0 is never drawn",
        "weights smoothed or floored so that excluded items come back into training",
        "FlooredWeights",
        Where.BOTH,
    ),
    _declared(
        "draw_counts",
        "num_samples draws per rank per epoch, as len() says",
        "len() counting every rank's draws, or ranks drawing different numbers, which hangs a collective "
        "(pytorch/vision #9127: len() disagreeing with what is yielded)",
        "LenCountsEveryRank",
        Where.BOTH,
    ),
    _declared(
        "ranks_draw_apart",
        "the ranks draw different streams",
        "every rank drawing the same weighted stream: W times the same data, the epoch W times too long "
        "(Lightning-AI/pytorch-lightning #3716); in real groups every process starts from the same global "
        "generator state, as fresh processes and seed_everything leave them, so a sampler that draws on it is seen",
        "EveryRankSameStream",
        Where.BOTH,
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "weighted_deterministic",
        "the same stream for the same seed and epoch",
        "draws from the process's global generator (MONAI's DistributedWeightedRandomSampler with its default "
        "generator=None), or from a generator that carries over from epoch to epoch: a run cannot be reproduced, "
        "nor resumed at an epoch with the stream the uninterrupted run drew",
        "GlobalGenerator",
        needs=("seed",),
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "weighted_reshuffles",
        "a new stream after set_epoch",
        "the epoch never reaching the sampler that draws (Lightning-AI/pytorch-lightning #21454: "
        "DistributedSamplerWrapper does not pass set_epoch on)",
        "EpochNotPassedOn",
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "weighted_seed_effective",
        "another seed, another stream",
        "the seed never reaching the generator (huggingface/transformers #11406: always seed 0)",
        "SeedIgnored",
        needs=("seed",),
        judged_from=2,  # an order: one item cannot show it
    ),
    _declared(
        "frequencies_match_weights",
        "draws follow the weights",
        "a distribution other than the weights over the whole dataset: each rank normalising the weights of its "
        "own partition (MONAI's DistributedWeightedRandomSampler, Project-MONAI/MONAI #1742) over-draws items in "
        "light partitions",
        "PartitionWeighted",
    ),
    Invariant(
        "frequencies_in_partition",
        "each rank's draws follow its partition's weights",
        "a partition other than DistributedSampler's: the shuffle, the seed or the epoch left out, so a rank "
        "draws over items that are not its own",
        f"{_BAD}:UnshuffledPartition",
        proven_under="weighted_partition",
        where=Where.IN_PROCESS,
    ),
)
