"""The steps scenarios are made of, each written once for rank processes and simulated ranks.

Every call into the sampler goes through :meth:`RankContext.call`. It marks the process as
inside the sampler (a death there is the sampler's: ``RankSetup.watch``), notes when the
call began (``--rank-timeout`` bounds one call into one rank's sampler), and turns what
the sampler raises into :class:`StepFailed`, carrying the sampler's frames as evidence.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from itertools import islice
from typing import Any, TypeVar

import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import BatchSampler

from sampler_conformance.core.case import Case, ReportedLength
from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.evidence import FAULT
from sampler_conformance.execution.backend import rank_device
from sampler_conformance.execution.blame import sampler_frames_in_traceback

from ..dataset import IndexDataset
from ..plug import SamplerPlug
from ..reading import BadIndex, Reading, read_limit, read_pass, reported_len

T = TypeVar("T")


@dataclass(frozen=True)
class CallWatch:
    """Shared with the controller (``multiprocessing`` raw values): whether the process is
    inside a call into the sampler, since when, and which rank it is running."""

    in_sampler: Any  # RawValue("b"): 1 inside a call
    call_started: Any  # RawValue("d"): time.monotonic() when the latest call began
    rank: Any  # RawValue("i"): the rank being run (simulated ranks run in turn)
    # RawValue("b"): 1 while the rank waits in the suite's own collective, where a peer that
    # raised or died leaves it waiting: a consequence of that fault, not one of its own.
    in_collective: Any

    @classmethod
    def create(cls, context: Any) -> CallWatch:
        return cls(
            context.RawValue("b", 0), context.RawValue("d", 0.0), context.RawValue("i", 0), context.RawValue("b", 0)
        )


class StepFailed(Exception):
    """A call into the sampler (or the loader driving it) raised."""

    def __init__(self, rank: int, flag: str, summary: str, sampler_frames: tuple[str, ...]) -> None:
        super().__init__(summary)
        self.rank = rank
        self.flag = flag
        self.summary = summary
        self.sampler_frames = sampler_frames


def raised(exc: BaseException, step: str, who: str = "the sampler") -> str:
    """``the sampler raised ValueError while iterating: ...``: the words for a sampler's exception."""
    return f"{who} raised {type(exc).__name__} {step}: {str(exc) or '(no message)'}"


@dataclass
class RankContext:
    """One rank running a scenario: who it is, the sampler, and where it runs."""

    rank: int
    world_size: int
    plug: SamplerPlug
    watch: CallWatch
    backend: str | None = None  # the process group's; None: a simulated rank, no group
    epoch: int | None = None  # the epoch set last, for failure reports

    def __post_init__(self) -> None:
        self.watch.rank.value = self.rank

    def call(self, what: str, work: Callable[[], T], *, into_sampler: bool = True) -> T:
        """Run one call into the sampler. ``into_sampler=False`` for calls into machinery
        that drives it (a DataLoader): their exceptions count against the sampler only
        when its frames are on the traceback."""
        self.watch.call_started.value = time.monotonic()
        self.watch.in_sampler.value = 1
        try:
            return work()
        except BadIndex as exc:
            raise StepFailed(self.rank, "valid_indices", f"the sampler {exc}", ("(the items it yielded)",)) from exc
        except (Exception, KeyboardInterrupt, SystemExit) as exc:
            # A real Ctrl-C never reaches this process (it runs in its own process group):
            # KeyboardInterrupt and SystemExit here came from the sampler.
            frames = tuple(sampler_frames_in_traceback(exc.__traceback__))
            if into_sampler and not frames:  # raised by the call itself, say len() of a float
                frames = (f"(the call into the sampler {what})",)
            who = "the sampler" if frames else "the machinery driving the sampler (no sampler frame on the traceback)"
            raise StepFailed(self.rank, FAULT, raised(exc, what, who), frames) from exc
        finally:
            self.watch.in_sampler.value = 0


class Build(str, Enum):
    """How a rank constructs its sampler."""

    GROUP = "num_replicas=None, rank=None (from the process group)"
    EXPLICIT = "num_replicas=W, rank=RANK"
    SINGLE = "num_replicas=1, rank=0"
    DEFAULTS = "the dataset alone (every other parameter left to its default)"


def build(rank: RankContext, case: Case, contract: Contract, how: Build = Build.EXPLICIT) -> Any:
    """Construct this rank's sampler for ``case``, the way ``how`` says."""
    if how in (Build.GROUP, Build.DEFAULTS) and rank.backend is None:
        raise RuntimeError(f"a simulated rank has no process group to build from ({how.value})")
    num_replicas, rank_number = {
        Build.GROUP: (None, None),
        Build.EXPLICIT: (rank.world_size, rank.rank),
        Build.SINGLE: (1, 0),
        Build.DEFAULTS: (None, None),
    }[how]
    options = {} if how is Build.DEFAULTS else case.sampler_options(yields_batches=contract.yields_batches)
    dataset = IndexDataset(case.dataset_size)
    return rank.call(
        f"in its constructor ({how.value})", lambda: rank.plug.build(dataset, num_replicas, rank_number, **options)
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


def read(rank: RankContext, sampler: Any, contract: Contract, dataset_size: int, world_size: int) -> Reading:
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


def all_reduce_counts(rank: RankContext, count: int) -> tuple[int, ...]:
    """All-reduce (sum) of a one-hot vector: every rank learns every rank's count."""
    if rank.backend is None:
        raise RuntimeError("a simulated rank has no process group to all-reduce in")
    # The rank body exports LOCAL_RANK as torchrun does: the GPU index on this rank's node.
    local_rank = int(os.environ.get("LOCAL_RANK", rank.rank))
    counts = torch.zeros(rank.world_size, dtype=torch.int64, device=rank_device(rank.backend, local_rank))
    counts[rank.rank] = count
    rank.watch.in_collective.value = 1
    try:
        dist.all_reduce(counts)
    finally:
        rank.watch.in_collective.value = 0
    return tuple(int(c) for c in counts.cpu().tolist())


def no_indices() -> np.ndarray:
    return np.empty(0, dtype=np.int64)
