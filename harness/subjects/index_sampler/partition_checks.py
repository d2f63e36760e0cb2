"""The per-epoch invariants of which indices the ranks yield together: every index valid
(``valid``), their union covering range(N) (``padded_epochs``, ``exact_partition``, ``covers``),
and no index repeated beyond the padding (``padded_epochs``, ``truncated_epochs``,
``exact_partition``). Each is declared on its check in the per-epoch table (``checks.PER_EPOCH``).
"""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.counting import index_counts
from sampler_conformance.core.evidence import Violation, counted, shorten
from sampler_conformance.core.invariants import Invariant

from .case import IndexCase
from .checks import KNOWN_BAD, PER_EPOCH
from .contracts import COVERS, EXACT_PARTITION, PADDED_EPOCHS, TRUNCATED_EPOCHS, VALID, SamplerContract


@PER_EPOCH.declare(
    Invariant(
        "valid_indices",
        "valid indices",
        "tensors, floats, negative or out-of-range indices, samplers that never stop; under the batch contracts, "
        "empty batches too (a rank past the last global batch yielding [], which fails its step)",
        f"{KNOWN_BAD}:YieldsTensors",
        promised_by=(VALID,),
    ),
    partial=True,
)
def check_valid_indices(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    n = obs.case.dataset_size
    violations = []
    for position, indices in enumerate(obs.indices):
        rank = obs.rank_of(position)
        bad = np.flatnonzero((indices < 0) | (indices >= n))
        if bad.size:
            at = int(bad[0])
            violations.append(
                Violation(
                    "valid_indices",
                    f"rank {rank} yielded {int(indices[at])} at position {at}; "
                    f"indices must lie in [0, N) = [0, {n}) ({bad.size} out of range)",
                )
            )
    for position, batches in enumerate(obs.batches or ()):
        rank = obs.rank_of(position)
        empty = [at for at, batch in enumerate(batches) if batch.size == 0]
        if empty:
            violations.append(
                Violation(
                    "valid_indices",
                    f"rank {rank} yielded an empty batch as batch {empty[0]} ({len(empty)} in all); a batch holds at "
                    f"least one index: a DataLoader's default collate cannot batch nothing, so the rank fails its step",
                )
            )
    return violations


@PER_EPOCH.declare(
    Invariant(
        "covers",
        "union coverage",
        "silently dropped data",
        f"{KNOWN_BAD}:RankInSeed",
        promised_by=(
            PADDED_EPOCHS,
            EXACT_PARTITION,
            COVERS,
        ),
    )
)
def check_coverage(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """Without drop_last the ranks together yield every index of range(N)."""
    case = obs.case
    if case.drop_last:
        return []
    missing = np.flatnonzero(index_counts([obs], obs.case.dataset_size) == 0)
    if not missing.size:
        return []
    return [
        Violation(
            "covers",
            f"without drop_last the ranks together must cover range(N) = range({case.dataset_size}); "
            f"{counted(missing.size, 'index', 'indices')} {'is' if missing.size == 1 else 'are'} never yielded: "
            f"{shorten(missing)}",
        )
    ]


@PER_EPOCH.declare(
    Invariant(
        "disjoint",
        "ranks disjoint unless padded",
        "silently duplicated data beyond the padding",
        f"{KNOWN_BAD}:DropLastIgnored",
        promised_by=(
            PADDED_EPOCHS,
            TRUNCATED_EPOCHS,
            EXACT_PARTITION,
        ),
    ),
    partial=True,
)
def check_disjoint(
    obs: Observation[IndexCase], contract: SamplerContract, one_rank: Observation[IndexCase] | None = None
) -> list[Violation]:
    """No index is yielded twice beyond the padding the contract allows (none with drop_last).
    Counted by sorting what was read, not over range(N): on a partial reading at N = 2^31, the
    ranks read repeat no more than the whole job may."""
    case = obs.case
    read = np.concatenate(obs.indices) if obs.indices else np.empty(0, dtype=np.int64)
    values, counts = np.unique(read[(read >= 0) & (read < case.dataset_size)], return_counts=True)
    allowed = contract.padding_size(case.dataset_size, case.world_size, case.drop_last)
    surplus = int(counts.sum()) - values.size
    if surplus <= allowed:
        return []
    repeated = values[counts > 1]
    first = int(repeated[0])
    holders = [obs.rank_of(position) for position, indices in enumerate(obs.indices) if np.any(indices == first)]
    why = (
        f"the length rule is {contract.length_words(case.drop_last)}"
        if contract.drops_tail(case.drop_last)
        else f"the contract allows {allowed} padded items here"
    )
    return [
        Violation(
            "disjoint",
            f"{surplus} items repeat an index already yielded, but {why}; repeated indices: "
            f"{shorten(repeated)}; index {first} comes from ranks {holders}",
        )
    ]
