"""The per-epoch invariants of the samplers that group their samples for a loss: generation
batches of whole groups of G copies, each index in one group an epoch (``repeated_groups``,
trl's GRPO); batches of at least two labels each at least twice, each index read once and
only what cannot be grouped left out (``label_groups``, a triplet loss). Each is declared on
its check in the per-epoch table (``checks.PER_EPOCH``).
"""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.counting import index_counts
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Invariant

from .case import IndexCase
from .checks import FAMILIES, PER_EPOCH
from .contracts import LABEL_GROUPS, REPEATED_GROUPS, SamplerContract

# A generation batch, in the words of a violation.
GATHERED = "round {t} of the ranks' batches, rank 0's first, as the trainer's gather concatenates them"


def generation_batches(obs: Observation[IndexCase]) -> list[np.ndarray]:
    """Round t of the ranks' batches, gathered rank by rank: what trl's GRPO trainer gathers
    across processes and scores together. Rounds some rank lacks are left out: unequal batch
    counts are ``equal_batches``' to charge."""
    assert obs.batches is not None
    return [np.concatenate(round_) for round_ in zip(*obs.batches, strict=False)]


@PER_EPOCH.declare(
    Invariant(
        "repeat_groups",
        "generation batches of whole groups",
        "copies of one sample not adjacent in the gathered generation batch (the group repeated where each sample "
        "should be, trl #4531), or a group cut across two: the trainer's rewards.view(-1, G) then normalises "
        "rewards across different samples",
        f"{FAMILIES}:CopiesNotAdjacent",
        proven_under="groups",
        promised_by=(REPEATED_GROUPS,),
    )
)
def check_repeat_groups(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each generation batch is groups of G consecutive copies of one index."""
    g = obs.case.repeats
    for t, batch in enumerate(generation_batches(obs)):
        if batch.size % g:
            return [
                Violation(
                    "repeat_groups",
                    f"generation batch {t} ({GATHERED.format(t=t)}) holds {batch.size} items, not a multiple of "
                    f"G={g}, so a group is cut across generation batches: {shorten(batch)}",
                )
            ]
        groups = batch.reshape(-1, g)
        mixed = np.flatnonzero((groups != groups[:, :1]).any(axis=1))
        if mixed.size:
            j = int(mixed[0])
            return [
                Violation(
                    "repeat_groups",
                    f"generation batch {t} ({GATHERED.format(t=t)}) should be groups of G={g} copies of one index, "
                    f"but group {j} holds {groups[j].tolist()}: {shorten(batch)}; the trainer's "
                    f"rewards.view(-1, {g}) then normalises rewards across different samples",
                )
            ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "selected_once",
        "each index in one group an epoch, all but an incomplete generation batch",
        "a generation batch read again as new data (the chunk repeated for each step, trl #3675), or ranks that "
        "select their own samples: some trained on twice an epoch, others never",
        f"{FAMILIES}:GenerationRepeated",
        proven_under="groups",
        promised_by=(REPEATED_GROUPS,),
    )
)
def check_selected_once(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each index is read G times or never, and fewer than W x B / G indices (those of the
    incomplete last generation batch) are never read."""
    case = obs.case
    g = case.repeats
    counts = index_counts([obs], case.dataset_size)
    over = np.flatnonzero(counts > g)
    if over.size:
        i = int(over[0])
        return [
            Violation(
                "selected_once",
                f"index {i} is read {int(counts[i])} times in the epoch, where a selected index is read G={g} "
                f"times, in one group; {over.size} indices are selected more than once: {shorten(over)}",
            )
        ]
    per_generation = max(case.world_size * case.batch_size // g, 1)
    never = np.flatnonzero(counts == 0)
    if never.size >= per_generation:
        return [
            Violation(
                "selected_once",
                f"{never.size} of N={case.dataset_size} indices are never read: {shorten(never)}; a generation batch "
                f"selects W x B / G = {per_generation} indices, so only an incomplete one, fewer than "
                f"{per_generation}, may be left out",
            )
        ]
    return []


def _in_range(items: np.ndarray, dataset_size: int) -> np.ndarray:
    return items[(items >= 0) & (items < dataset_size)]  # the others are valid_indices' to charge


@PER_EPOCH.declare(
    Invariant(
        "label_grouped",
        "every batch at least two labels, each at least twice",
        "batches of one label, or a label with one item in a batch: a triplet loss then finds no negative or no "
        "positive and its gradient is zero (sentence-transformers #2920, each label's items chunked in turn; "
        "#4013, a leftover pair meeting its own label at the next round)",
        f"{FAMILIES}:LabelsConcatenated",
        proven_under="labels",
        promised_by=(LABEL_GROUPS,),
    )
)
def check_label_grouped(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Each batch any rank reads holds at least two labels, each at least twice."""
    assert obs.batches is not None
    labels, n = obs.case.labels(), obs.case.dataset_size
    kinds = int(labels.max(initial=0)) + 1
    for rank, batches in enumerate(obs.batches):
        if not batches:
            continue
        # Each item's (batch, label), counted at once: a rank may read thousands of batches.
        items = obs.indices[rank]
        of_batch = np.repeat(np.arange(len(batches)), [len(batch) for batch in batches])
        valid = (items >= 0) & (items < n)
        counts = np.bincount(of_batch[valid] * kinds + labels[items[valid]], minlength=len(batches) * kinds).reshape(
            len(batches), kinds
        )
        wrong = np.flatnonzero(((counts > 0).sum(axis=1) < 2) | (counts == 1).any(axis=1))
        if wrong.size:
            k = int(wrong[0])
            held = ", ".join(f"label {a} x{int(counts[k, a])}" for a in np.flatnonzero(counts[k]))
            return [
                Violation(
                    "label_grouped",
                    f"rank {rank}'s batch {k}, {shorten(batches[k])}, holds {held or 'no item'}: a batch needs at "
                    f"least two labels, each at least twice, for a triplet loss to find a positive and a "
                    f"negative for every anchor",
                )
            ]
    return []


@PER_EPOCH.declare(
    Invariant(
        "read_once",
        "each index read once an epoch, the last round's padding aside",
        "every rank reading every batch: a batch sampler with no rank given to each rank's DataLoader unsharded, "
        "so each sample is trained on W times an epoch",
        f"{FAMILIES}:EveryRankReadsAll",
        proven_under="labels",
        promised_by=(LABEL_GROUPS,),
    )
)
def check_read_once(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """No index is read twice in an epoch's batches but those of its last round, which may
    repeat earlier ones so that every rank has a batch there (accelerate's even_batches)."""
    assert obs.batches is not None
    rounds = max((len(batches) for batches in obs.batches), default=0)
    before_last = [batch for batches in obs.batches for batch in batches[: rounds - 1]]
    if not before_last:
        return []
    counts = np.bincount(_in_range(np.concatenate(before_last), obs.case.dataset_size))
    twice = np.flatnonzero(counts > 1)
    if not twice.size:
        return []
    i = int(twice[0])
    where = [
        f"rank {rank}'s batch {k}"
        for rank, batches in enumerate(obs.batches)
        for k, batch in enumerate(batches[: rounds - 1])
        if i in batch
    ]
    return [
        Violation(
            "read_once",
            f"index {i} is read {int(counts[i])} times before the epoch's last round ({', '.join(where[:4])}); "
            f"{twice.size} indices are read more than once: {shorten(twice)}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "leftovers_bounded",
        "only what cannot be grouped left out",
        "items left out that could have been grouped: each label cut to half its items (sentence-transformers "
        "#2782), or a whole label never read",
        f"{FAMILIES}:HalfOfEachLabel",
        proven_under="labels",
        promised_by=(LABEL_GROUPS,),
    )
)
def check_leftovers_bounded(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Of each label but the one with the most items left out, at most one item is left out
    (a label of one item, or the odd one of a label read in pairs), and fewer than W x B
    beyond those: one incomplete round of batches."""
    case = obs.case
    labels = case.labels()
    read = index_counts([obs], case.dataset_size) > 0
    left = np.bincount(labels[~read], minlength=int(labels.max(initial=0)) + 1)
    if not left.any():
        return []
    most = int(np.argmax(left))
    beyond = np.maximum(left - 1, 0)
    beyond[most] = 0
    bound = case.world_size * case.batch_size
    if int(beyond.sum()) < bound:
        return []
    worst = [int(k) for k in np.argsort(-beyond, kind="stable") if beyond[k]][:4]
    return [
        Violation(
            "leftovers_bounded",
            f"{int(left.sum())} of N={case.dataset_size} items are left out of the epoch, "
            + ", ".join(f"label {k}: {int(left[k])} of {int((labels == k).sum())}" for k in [most, *worst])
            + f"; beyond one item a label and the excess of label {most} (the one with the most left), "
            f"{int(beyond.sum())} could have been grouped, where fewer than one round's W x B = {bound} may be left",
        )
    ]
