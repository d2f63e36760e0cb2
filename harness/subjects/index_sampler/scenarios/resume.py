"""Resume from ``state_dict()``, as training loops do (docs/resume-and-elastic.md,
"The resume protocol").

Every rank reads the uninterrupted run first: a sampler built for the case, ``set_epoch(e)``
and one pass, then each later epoch on the same object. Then the interrupted run: a fresh
sampler, ``set_epoch(e)``, k items, ``state_dict()``. The state goes through
``torch.save``/``torch.load(weights_only=True)`` as a checkpoint does, into a fresh sampler
with the same arguments: ``load_state_dict(state)``, then ``set_epoch(e)`` and the rest of
the pass, then the later epochs. A second cut resumes again, from the resumed sampler.

In a real process group the samplers are built from the group, and the ranks all-reduce
how many items and batches their resumed pass held, as DDP would meet them step by step.

The global RNGs are seeded before every build, so a resume is compared with an
uninterrupted run under the same global state; ``plain_state`` reseeds them differently
before the resume to show the order does not depend on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.counting import batch_count
from sampler_conformance.execution.checkpoint import missing_methods, through_checkpoint
from sampler_conformance.execution.collectives import all_reduce_counts
from sampler_conformance.execution.global_rng import seed_global_rngs
from sampler_conformance.execution.scenario import RankContext, Ranks, ask
from sampler_conformance.subjects.common.index_dataset import IndexDataset
from sampler_conformance.subjects.common.reading import read_limit

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from ..reading import Reading, observation_of, take
from ..runs import ResumeRun
from . import SamplerScenario
from .steps import CONSTRUCTOR, Build, build, has_set_epoch, read, set_epoch


@dataclass(frozen=True)
class ResumedRank:
    rank: int
    uninterrupted: tuple[Reading, ...]  # epoch e, then the epochs after it
    consumed: tuple[Reading, ...]  # the items taken before each checkpoint (after_pass: the whole pass)
    resumed: tuple[Reading, ...]  # after the last resume: its first pass, then the epochs after it
    not_plain: str | None = None  # why a state could not go through torch.save/torch.load(weights_only=True)
    missing: tuple[str, ...] = ()  # Stateful methods the sampler lacks: nothing was resumed
    has_set_epoch: bool = True
    # In a process group: every rank's count of the resumed pass's items, and of its batches,
    # as the all-reduce delivered them on this rank.
    reduced_items: tuple[int, ...] = ()
    reduced_batches: tuple[int, ...] = ()


@dataclass(frozen=True)
class Resume(SamplerScenario):
    epoch: int = 0
    cuts: tuple[int, ...] = (0,)  # checkpoint after this many items of the epoch; each further cut resumes again
    after_pass: bool = False  # the checkpoint follows the end of the epoch's pass: the loop goes on at epoch + 1
    fresh_state: bool = False  # the state is that of a sampler just built (no set_epoch, no iteration)
    later_epochs: int = 0  # epochs read after the resumed pass, on the resumed sampler
    global_seed: int = 0  # the global RNGs are seeded with it before each build...
    resumed_global_seed: int | None = None  # ...and with this before each resume (None: the same)

    def run(self, rank: RankContext) -> ResumedRank:
        case, contract = self.case, self.contract
        world = rank.world_size
        next_epochs = int(self.after_pass) + self.later_epochs
        seed_global_rngs(self.global_seed)
        sampler = self._built(rank)
        uninterrupted = []
        for epoch in range(self.epoch, self.epoch + 1 + next_epochs):
            set_epoch(rank, sampler, epoch)
            uninterrupted.append(read(rank, sampler, contract, case.dataset_size, world))
        missing = missing_methods(sampler)
        if missing:
            return ResumedRank(rank.rank, tuple(uninterrupted), (), (), missing=missing)
        pass_length = items_in(uninterrupted[0])

        seed_global_rngs(self.global_seed)
        sampler = self._built(rank)
        state = rank.call("in state_dict()", sampler.state_dict) if self.fresh_state else None
        consumed: list[Reading] = []
        not_plain = None
        position = 0
        for cut in self.cuts:
            if state is None:  # a cut of this epoch: set_epoch(e), k items, then the checkpoint
                set_epoch(rank, sampler, self.epoch)
                count = read_limit(case.dataset_size) + 1 if self.after_pass else min(cut, pass_length) - position
                consumed.append(self._take(rank, sampler, count))
                position += items_in(consumed[-1])
                state = rank.call("in state_dict()", sampler.state_dict)
            state, why = through_checkpoint(state)
            not_plain = not_plain or why
            sampler = self._resumed(rank, state)
            state = None
        resumed = []
        for epoch in range(self.epoch + int(self.after_pass), self.epoch + 1 + next_epochs):
            set_epoch(rank, sampler, epoch)
            resumed.append(read(rank, sampler, contract, case.dataset_size, world))
        reduced_items: tuple[int, ...] = ()
        reduced_batches: tuple[int, ...] = ()
        if rank.backend is not None:
            reduced_items = all_reduce_counts(rank, items_in(resumed[0]))
            reduced_batches = all_reduce_counts(rank, batches_in(resumed[0], case.batch_size))
        return ResumedRank(
            rank.rank,
            tuple(uninterrupted),
            tuple(consumed),
            tuple(resumed),
            not_plain=not_plain,
            has_set_epoch=has_set_epoch(sampler),
            reduced_items=reduced_items,
            reduced_batches=reduced_batches,
        )

    def _built(self, rank: RankContext) -> Any:
        """This rank's sampler for the case: from the process group in one, else explicit."""
        return build(rank, self.case, self.contract, Build.EXPLICIT if rank.backend is None else Build.GROUP)

    def _take(self, rank: RankContext, sampler: Any, count: int) -> Reading:
        """The next ``count`` items of a pass begun here (all of it, for a count past its end)."""
        iterator = rank.call("in iter()", lambda: iter(sampler))
        return rank.call("while iterating", lambda: take(iterator, count, self.contract))

    def _resumed(self, rank: RankContext, state: Any) -> Any:
        """A fresh sampler with the case's arguments that loaded ``state``."""
        resumed_seed = self.global_seed if self.resumed_global_seed is None else self.resumed_global_seed
        seed_global_rngs(resumed_seed)
        sampler = self._built(rank)
        rank.call("in load_state_dict(state)", lambda: sampler.load_state_dict(state))
        return sampler


def resume(ranks: Ranks, plug: SamplerPlug, contract: SamplerContract, case: IndexCase, **protocol: Any) -> ResumeRun:
    """Every rank's uninterrupted and resumed run of ``case`` (``protocol``: the fields of
    :class:`Resume` after the case)."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[ResumedRank] = ask(ranks, Resume(plug.spec, contract, case, **protocol))
    has_epoch = all(reply.has_set_epoch for reply in replies)
    epoch = protocol.get("epoch", 0)
    first_resumed = epoch + int(protocol.get("after_pass", False))

    def observations(pick: Any, first_epoch: int | None) -> tuple[Observation[IndexCase], ...]:
        per_rank = [pick(reply) for reply in replies]
        count = min(len(readings) for readings in per_rank)
        return tuple(
            observation_of(
                case.with_(epoch=first_epoch + k if has_epoch and first_epoch is not None else None),
                [readings[k] for readings in per_rank],
                contract,
            )
            for k in range(count)
        )

    return ResumeRun(
        epoch=epoch,
        uninterrupted=observations(lambda r: r.uninterrupted, epoch),
        consumed=observations(lambda r: r.consumed, epoch),
        resumed=observations(lambda r: r.resumed, first_resumed),
        first_resumed_epoch=first_resumed,
        not_plain=tuple((reply.rank, reply.not_plain) for reply in replies if reply.not_plain),
        missing=replies[0].missing,
        has_set_epoch=has_epoch,
        reduced_items=tuple(reply.reduced_items for reply in replies if reply.reduced_items),
        reduced_batches=tuple(reply.reduced_batches for reply in replies if reply.reduced_batches),
    )


def items_in(reading: Reading) -> int:
    """What a reading counts as items: batches for a batch sampler, else indices."""
    return len(reading.batches) if reading.batches is not None else int(reading.indices.size)


def batches_in(reading: Reading, batch_size: int) -> int:
    """The batches a training step takes: a batch sampler's own, else those
    ``BatchSampler(sampler, batch_size, drop_last=False)`` cuts."""
    return len(reading.batches) if reading.batches is not None else batch_count(reading.indices.size, batch_size)


@dataclass(frozen=True)
class ForeignStateReply:
    refusal: str | None  # where and how the sampler refused the state; None: it went on with it
    missing: tuple[str, ...] = ()  # Stateful methods the sampler lacks: nothing was loaded
    taken: int = 0  # items rank 0 really took before saving: a state of none is valid anywhere
    # Whether rank 0's pass of the epoch differs under the other arguments: if not, resuming
    # there skips the very items the state counted, and the state is not stale.
    pass_differs: bool = True


@dataclass(frozen=True)
class LoadForeignState(SamplerScenario):
    """Rank 0 of the case takes ``taken`` items of the epoch and its state; a fresh sampler
    built for ``other`` (another dataset size, seed, shuffle, drop_last or world size) as
    rank 0 loads that state and yields its first item. The reply says where it refused the
    state (its exception), or None if it went on."""

    other: IndexCase | None = None
    epoch: int = 0
    taken: int = 1

    def simulated_ranks(self) -> Sequence[int]:
        return (0,)  # rank 0 of each world size, built explicitly

    def run(self, rank: RankContext) -> ForeignStateReply:
        assert self.other is not None
        sampler = self._built(rank, self.case)
        missing = missing_methods(sampler)
        if missing:
            return ForeignStateReply(None, missing)
        saved_pass = self._pass(rank, self.case)
        other_pass = self._pass(rank, self.other)
        pass_differs = not (
            np.array_equal(saved_pass.indices, other_pass.indices)
            and [len(b) for b in saved_pass.batches or ()] == [len(b) for b in other_pass.batches or ()]
        )
        set_epoch(rank, sampler, self.epoch)
        taken = rank.call("while iterating", lambda: take(iter(sampler), self.taken, self.contract))
        state, _ = through_checkpoint(rank.call("in state_dict()", sampler.state_dict))
        stale = self._built(rank, self.other)

        def refused() -> str | None:
            step = "load_state_dict(state)"
            try:
                stale.load_state_dict(state)
                step = f"set_epoch({self.epoch})"
                if has_set_epoch(stale):
                    stale.set_epoch(self.epoch)
                step = "the first item of iter()"
                next(islice(iter(stale), 1), None)
            except Exception as exc:  # any refusal will do
                return f"{type(exc).__name__} in {step}: {str(exc) or '(no message)'}"
            return None

        return ForeignStateReply(
            rank.call("while loading a state saved under other arguments", refused),
            taken=items_in(taken),
            pass_differs=pass_differs,
        )

    def _pass(self, rank: RankContext, case: IndexCase) -> Reading:
        """Rank 0's uninterrupted pass of the epoch, built for ``case``."""
        sampler = self._built(rank, case)
        set_epoch(rank, sampler, self.epoch)
        return read(rank, sampler, self.contract, case.dataset_size, case.world_size)

    def _built(self, rank: RankContext, case: IndexCase) -> Any:
        dataset = IndexDataset(case.dataset_size)
        options = case.sampler_options(self.contract)
        return rank.call(
            f"{CONSTRUCTOR} (num_replicas={case.world_size}, rank=0)",
            lambda: rank.plug.build(dataset, case.world_size, 0, **options),
        )


def foreign_state_refusal(
    ranks: Ranks,
    plug: SamplerPlug,
    contract: SamplerContract,
    case: IndexCase,
    other: IndexCase,
    epoch: int,
    taken: int,
) -> ForeignStateReply:
    """How a sampler built for ``other`` refused a state saved under ``case``."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return ask(ranks, LoadForeignState(plug.spec, contract, case, other, epoch, taken))[0]
