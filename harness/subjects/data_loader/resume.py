"""Resume a data loader through its own checkpoint (docs/data-loaders.md, "Resume").

``ResumeLoader``: every rank of DP size W reads

1. the uninterrupted run: a fresh loader, its epoch hook for e, epoch e; the hook for e + 1,
   epoch e + 1;
2. the interrupted run: a fresh loader, the hook for e, k batches, ``state_dict()``;
3. for each order of the two calls (:data:`ORDERS`), a fresh loader built with the same
   arguments, given the hook for e and ``load_state_dict(state)``, then the rest of epoch e;
   the hook for e + 1, epoch e + 1.

``ResumeOnOtherDpSize``: every rank of DP size W2 reads its uninterrupted epoch e, then
builds rank 0 of DP size W1's loader (a loader set by the seed and the epoch builds the same
on every rank), reads k batches of it and takes its ``state_dict()``: the checkpoint every new
rank is given, as olmo-core's checkpointer falls back to rank 0's state on another world
size. Its own fresh loader at W2, given the hook and that state, reads the rest of epoch e.

``CheckpointLoader``: every rank's loader reads k batches of epoch e and its ``state_dict()``
goes through a checkpoint file (``torch.save``, then ``torch.load(weights_only=True)``, torch's
default since 2.6), the one thing ``loader_plain_state`` judges.

Each state is carried as a checkpoint file carries it before it is loaded, so that no loader
shares a mutable object with the one that took it; one that cannot make the trip is deep-copied
instead, and charged to ``loader_plain_state`` alone. A loader without
``state_dict``/``load_state_dict`` is read no further: the checks charge that to every resume
invariant.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from sampler_conformance.execution.checkpoint import missing_methods, through_checkpoint
from sampler_conformance.execution.scenario import RankContext, Ranks, Scenario, ask
from sampler_conformance.subjects.common.reading import read_limit

from .case import LoaderCase
from .contracts import LoaderContract
from .plug import NOUN, LoaderPlug, epoch_hook, load_plug
from .runs import LoaderCheckpoint, LoaderEpoch, LoaderResume, LoaderResumeElsewhere
from .scenarios import build_loader, call_hook, rank_workdir, read_batches, read_epoch, start_epoch

Batches = tuple[np.ndarray, ...]
# The orders a fresh loader is given the epoch hook and the state in: a trainer loads the
# checkpoint, then starts the epoch (olmo-core's); a loop may set the epoch first.
HOOK_THEN_LOAD = "{hook}, then load_state_dict(state)"
LOAD_THEN_HOOK = "load_state_dict(state), then {hook}"
ORDERS = (HOOK_THEN_LOAD, LOAD_THEN_HOOK)


@dataclass(frozen=True)
class _Checkpointing(Scenario):
    """What both resume scenarios share: the case, the epoch interrupted, the batches before the checkpoint."""

    contract: LoaderContract
    case: LoaderCase
    epoch: int
    cut: int  # k: batches read before state_dict()
    noun = NOUN

    def load(self) -> LoaderPlug:
        return load_plug(self.spec)

    def interrupted(
        self, rank: RankContext, case: LoaderCase, dp_rank: int, workdir: str, loader: Any = None
    ) -> tuple[Batches, Any, str | None]:
        """Rank ``dp_rank``'s loader of ``case`` (a fresh one, unless given): its first k batches of
        the epoch, its state after them as a checkpoint file carries it, and why the state
        could not make that trip (None where it could)."""
        if loader is None:
            loader = build_loader(rank, rank.plug, case, dp_rank, workdir)
        call_hook(rank, loader, self.epoch)
        iterator: Iterator[Any] = start_epoch(rank, loader)
        before = read_batches(rank, iterator, read_limit(case.dataset_size), self.cut)
        state = rank.call(f"in state_dict() after {len(before)} batches", loader.state_dict)
        carried, not_plain = through_checkpoint(state)
        return before, copy.deepcopy(carried) if not_plain else carried, not_plain

    def resumed(self, rank: RankContext, state: Any, order: str, workdir: str) -> tuple[Any, Batches]:
        """A fresh loader of this rank given the epoch hook and ``state`` in ``order``, and the rest of the epoch."""
        loader = build_loader(rank, rank.plug, self.case, rank.rank, workdir)
        load = partial(rank.call, "in load_state_dict(state)", partial(loader.load_state_dict, state))
        if order == LOAD_THEN_HOOK:
            load()
        call_hook(rank, loader, self.epoch)
        if order == HOOK_THEN_LOAD:
            load()
        return loader, read_epoch(rank, loader, read_limit(self.case.dataset_size))


@dataclass(frozen=True)
class ResumedRank:
    rank: int
    uninterrupted: tuple[Batches, Batches]  # epochs e and e + 1
    before: Batches  # the k batches before the checkpoint
    resumed: tuple[tuple[Batches, Batches], ...]  # per order: the rest of epoch e, then epoch e + 1
    hook: str | None
    missing: tuple[str, ...] = ()  # Stateful methods the loader lacks: nothing was read


@dataclass(frozen=True)
class ResumeLoader(_Checkpointing):
    def run(self, rank: RankContext) -> ResumedRank:
        e, case = self.epoch, self.case
        limit = read_limit(case.dataset_size)
        with rank_workdir(rank) as workdir:
            loader = build_loader(rank, rank.plug, case, rank.rank, workdir)
            hook, missing = epoch_hook(loader), missing_methods(loader)
            if missing:
                return ResumedRank(rank.rank, ((), ()), (), (), hook, missing)
            uninterrupted = []
            for epoch in (e, e + 1):
                call_hook(rank, loader, epoch)
                uninterrupted.append(read_epoch(rank, loader, limit))
            before, state, _ = self.interrupted(rank, case, rank.rank, workdir)
            resumed = []
            for order in ORDERS:
                loader, rest = self.resumed(rank, copy.deepcopy(state), order, workdir)
                call_hook(rank, loader, e + 1)
                resumed.append((rest, read_epoch(rank, loader, limit)))
        return ResumedRank(rank.rank, (uninterrupted[0], uninterrupted[1]), before, tuple(resumed), hook)


@dataclass(frozen=True)
class ResumedElsewhereRank:
    rank: int
    uninterrupted: Batches  # epoch e at the new DP size
    before: Batches  # rank 0's k batches at the DP size the checkpoint was taken at
    rest: Batches  # the rest of epoch e, resumed at the new DP size
    hook: str | None
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResumeOnOtherDpSize(_Checkpointing):
    saved_on: int = 1  # W1: the DP size the checkpoint was taken at; the case's is the new one

    def run(self, rank: RankContext) -> ResumedElsewhereRank:
        case = self.case
        with rank_workdir(rank) as workdir:
            loader = build_loader(rank, rank.plug, case, rank.rank, workdir)
            hook, missing = epoch_hook(loader), missing_methods(loader)
            if missing:
                return ResumedElsewhereRank(rank.rank, (), (), (), hook, missing)
            call_hook(rank, loader, self.epoch)
            uninterrupted = read_epoch(rank, loader, read_limit(case.dataset_size))
            before, state, _ = self.interrupted(rank, case.with_(world_size=self.saved_on), 0, workdir)
            _, rest = self.resumed(rank, state, LOAD_THEN_HOOK, workdir)
        return ResumedElsewhereRank(rank.rank, uninterrupted, before, rest, hook)


@dataclass(frozen=True)
class CheckpointedRank:
    rank: int
    before: Batches  # the k batches before the checkpoint
    not_plain: str | None  # why its state could not go through a checkpoint file; None: it could
    hook: str | None
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckpointLoader(_Checkpointing):
    def run(self, rank: RankContext) -> CheckpointedRank:
        with rank_workdir(rank) as workdir:
            loader = build_loader(rank, rank.plug, self.case, rank.rank, workdir)
            hook, missing = epoch_hook(loader), missing_methods(loader)
            if missing:
                return CheckpointedRank(rank.rank, (), None, hook, missing)
            before, _, not_plain = self.interrupted(rank, self.case, rank.rank, workdir, loader)
        return CheckpointedRank(rank.rank, before, not_plain, hook)


def resume_loader(
    ranks: Ranks, plug: LoaderPlug, contract: LoaderContract, case: LoaderCase, *, epoch: int, cut: int
) -> LoaderResume:
    """Every rank's uninterrupted and resumed loaders of ``case``, as the view the resume checks read."""
    __tracebackhide__ = True  # failures point at the loader, not the harness
    replies: list[ResumedRank] = ask(ranks, ResumeLoader(plug.spec, contract, case, epoch, cut))
    hook = replies[0].hook

    def view(at_epoch: int, batches: list[Batches]) -> LoaderEpoch:
        return LoaderEpoch.of(case.with_(epoch=at_epoch), batches, hook)

    return LoaderResume(
        cut=max((len(reply.before) for reply in replies), default=0),
        uninterrupted=(
            view(epoch, [r.uninterrupted[0] for r in replies]),
            view(epoch + 1, [r.uninterrupted[1] for r in replies]),
        ),
        resumed=tuple(
            (
                order,
                view(epoch, [r.before + r.resumed[k][0] for r in replies]),
                view(epoch + 1, [r.resumed[k][1] for r in replies]),
            )
            for k, order in enumerate(ORDERS)
            if not replies[0].missing
        ),
        missing=replies[0].missing,
    )


def resume_on_other_dp_size(
    ranks: Ranks, plug: LoaderPlug, contract: LoaderContract, case: LoaderCase, *, epoch: int, cut: int, saved_on: int
) -> LoaderResumeElsewhere:
    """Rank 0's checkpoint at DP size ``saved_on`` resumed on every rank of ``case``'s DP size."""
    __tracebackhide__ = True  # failures point at the loader, not the harness
    scenario = ResumeOnOtherDpSize(plug.spec, contract, case, epoch, cut, saved_on=saved_on)
    replies: list[ResumedElsewhereRank] = ask(ranks, scenario)
    hook = replies[0].hook
    at_epoch = case.with_(epoch=epoch)
    return LoaderResumeElsewhere(
        saved_on=saved_on,
        cut=len(replies[0].before),
        uninterrupted=LoaderEpoch.of(at_epoch, [r.uninterrupted for r in replies], hook),
        resumed=LoaderEpoch.of(at_epoch, [r.rest for r in replies], hook),
        missing=replies[0].missing,
    )


def checkpoint_loader(
    ranks: Ranks, plug: LoaderPlug, contract: LoaderContract, case: LoaderCase, *, epoch: int, cut: int
) -> LoaderCheckpoint:
    """Every rank's state after k batches of ``case``'s epoch, and whether it went through a checkpoint file."""
    __tracebackhide__ = True  # failures point at the loader, not the harness
    replies: list[CheckpointedRank] = ask(ranks, CheckpointLoader(plug.spec, contract, case, epoch, cut))
    return LoaderCheckpoint(
        cut=max((len(reply.before) for reply in replies), default=0),
        before=LoaderEpoch.of(case.with_(epoch=epoch), [r.before for r in replies], replies[0].hook),
        not_plain=tuple((r.rank, r.not_plain) for r in replies if r.not_plain),
        missing=replies[0].missing,
    )
