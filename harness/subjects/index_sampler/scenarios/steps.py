"""The steps scenarios are made of, each written once for rank processes and simulated ranks.

Every call into the sampler goes through ``RankContext.call`` (``harness.execution.scenario``),
which bounds it and turns what the sampler raises into evidence.
"""

from __future__ import annotations

from enum import Enum
from itertools import islice
from typing import Any

import numpy as np
from torch.utils.data import BatchSampler

from sampler_conformance.core.case import ReportedLength
from sampler_conformance.execution.scenario import RankContext
from sampler_conformance.subjects.common.index_dataset import IndexDataset
from sampler_conformance.subjects.common.reading import read_limit, reported_len

from ...specs import MESH_GIVEN, MESH_PARAMETER
from ..case import IndexCase
from ..contracts import SamplerContract
from ..reading import Reading, read_pass

# A fault while the sampler is built, in its words ("raised ValueError in its constructor (...)").
CONSTRUCTOR = "in its constructor"


class Build(str, Enum):
    """How a rank constructs its sampler."""

    GROUP = "num_replicas=None, rank=None (from the process group)"
    EXPLICIT = "num_replicas=W, rank=RANK"
    SINGLE = "num_replicas=1, rank=0"
    DEFAULTS = "the dataset alone (every other parameter left to its default)"


def build(rank: RankContext, case: IndexCase, contract: SamplerContract, how: Build = Build.EXPLICIT) -> Any:
    """Construct this rank's sampler for ``case``, the way ``how`` says."""
    if how in (Build.GROUP, Build.DEFAULTS) and rank.backend is None:
        raise RuntimeError(f"a simulated rank has no process group to build from ({how.value})")
    num_replicas, rank_number = {
        Build.GROUP: (None, None),
        Build.EXPLICIT: (rank.world_size, rank.rank),
        Build.SINGLE: (1, 0),
        Build.DEFAULTS: (None, None),
    }[how]
    options = {} if how is Build.DEFAULTS else case.sampler_options(contract)
    if how is Build.SINGLE and contract.repeats:
        # The same job on one rank: its batches hold the W ranks' batches of a round, so a
        # generation batch keeps its W x B items (G divides that, not always B).
        options["batch_size"] = case.batch_size * case.world_size
    dataset = IndexDataset(case.dataset_size)
    built_as = how.value
    if how is Build.EXPLICIT and rank.mesh is not None and rank.plug.takes_mesh:
        # On a mesh, a sampler that takes the mesh finds its data coordinates there itself.
        num_replicas, rank_number = None, None
        options[MESH_PARAMETER] = rank.mesh.device_mesh
        built_as = MESH_GIVEN
    return rank.call(
        f"{CONSTRUCTOR} ({built_as})", lambda: rank.plug.build(dataset, num_replicas, rank_number, **options)
    )


def has_set_epoch(sampler: Any) -> bool:
    return callable(getattr(sampler, "set_epoch", None))


def set_epoch(rank: RankContext, sampler: Any, epoch: int | None) -> None:
    """As a guarded training loop does: a sampler without set_epoch is not called. The reply
    says so, and only the invariant that needs set_epoch counts its absence."""
    rank.epoch = epoch
    if sampler is None or epoch is None or not has_set_epoch(sampler):
        return
    rank.call(f"in set_epoch({epoch})", lambda: sampler.set_epoch(epoch))


def read(rank: RankContext, sampler: Any, contract: SamplerContract, dataset_size: int, world_size: int) -> Reading:
    """One pass over the sampler (a prefix of an endless one), then ``len()`` if it has one."""
    return read_pass(sampler, contract, dataset_size, world_size, rank.call)


def count_batches(
    rank: RankContext, sampler: Any, batch_size: int, drop_last: bool, dataset_size: int
) -> tuple[int, ReportedLength]:
    """``BatchSampler(sampler, batch_size, drop_last)``: the batches one pass yields, and its
    len() (which asks the sampler's: none if the sampler defines no ``__len__``)."""
    batcher = BatchSampler(sampler, batch_size, drop_last)
    limit = read_limit(dataset_size)
    # islice: a sampler that never stops must not spin forever here
    count = rank.call("while iterating", lambda: sum(1 for _ in islice(batcher, limit + 1)))
    return count, reported_len(batcher, "in len(BatchSampler(sampler))", rank.call, sampler)


def no_indices() -> np.ndarray:
    return np.empty(0, dtype=np.int64)
