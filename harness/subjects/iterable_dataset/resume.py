"""Resume a stream through torchdata's ``StatefulDataLoader``, as training loops do
(docs/streaming-datasets.md, "Resume").

Every rank builds its dataset and a ``StatefulDataLoader`` over it (the case's workers,
persistent or not, and batch size). The uninterrupted loader reads epochs e and e + 1,
``set_epoch`` before each. The interrupted run: a fresh dataset and loader, ``set_epoch(e)``,
k batches, ``loader.state_dict()``; the state goes through ``torch.save`` and
``torch.load(weights_only=True)`` into a fresh dataset and loader,
``loader.load_state_dict(state)``, ``set_epoch(e)``; a second cut takes k' more batches and
checkpoints again. After the last resume the loader reads the rest of epoch e, then
``set_epoch(e + 1)`` and that epoch. A cut of ``None`` reads the epoch to its end before
the checkpoint: the resumed run goes on with epoch e + 1.

What torchdata 0.11 does with the dataset (``torchdata/stateful_dataloader``):

- Without workers, ``loader.state_dict()`` holds the dataset's ``state_dict()`` of that
  moment; with workers, each worker's copy's, as it was after the last batch the loop took
  from that worker (a worker that has yielded nothing since a resume: its state at start).
- ``load_state_dict`` only keeps the state: the next ``iter(loader)`` hands each worker's
  state to that worker's copy (``load_state_dict``, after the loop's ``set_epoch``), then
  iterates it; the main process's copy gets its own only without workers.
- A dataset without ``state_dict``/``load_state_dict`` is fast-forwarded: the loader reads
  and drops as many batches as were taken, which costs a re-read of the epoch so far, and on
  a second resume drops the first run's batches twice (0.11.0: the state after a
  fast-forward counts them again; docs/streaming-datasets.md, "Resume"). ``+resumable``
  asks for the protocol, and charges its absence to every resume invariant without reading.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

from sampler_conformance.execution.checkpoint import missing_methods, through_checkpoint
from sampler_conformance.execution.scenario import RankContext, Ranks, Scenario, ask

from .case import StreamCase
from .contracts import StreamContract
from .items import Batch, checked
from .loading import has_set_epoch, loader_generator, read_limit, read_to_end, real_loader, set_epoch
from .plug import StreamPlug, load_plug
from .runs import StreamEpoch, StreamResume
from .scenarios import layouts_root, stream_epoch, workdir_of

Batches = tuple[Batch, ...]


@dataclass(frozen=True)
class ResumedRank:
    rank: int
    uninterrupted: tuple[Batches, Batches]  # epochs e and e + 1
    legs: tuple[Batches, ...]  # the batches each run took before its checkpoint
    resumed: tuple[Batches, ...]  # after the last resume: the rest of epoch e (unless it had ended), then e + 1
    not_plain: str | None  # why a state could not go through torch.save/torch.load(weights_only=True)
    has_set_epoch: bool
    missing: tuple[str, ...] = ()  # Stateful methods the dataset lacks: nothing was read


@dataclass(frozen=True)
class ResumeStream(Scenario):
    contract: StreamContract
    case: StreamCase
    workdir_root: str
    epoch: int
    cuts: tuple[int | None, ...]  # batches taken before each checkpoint; None: the whole epoch

    def load(self) -> StreamPlug:
        return load_plug(self.spec)

    def run(self, rank: RankContext) -> ResumedRank:
        # torchdata logs a warning on every resume of a dataset without state_dict (fast-forwarded).
        logging.getLogger("torchdata.stateful_dataloader.stateful_dataloader").setLevel(logging.ERROR)
        epochs = (self.epoch, self.epoch + 1)
        dataset, loader = self._fresh(rank)
        missing = missing_methods(dataset)
        if missing:  # fast-forwarded by the loader, not resumed: the checks charge it at once
            return ResumedRank(rank.rank, ((), ()), (), ((),), None, has_set_epoch(dataset), missing=missing)
        uninterrupted = []
        for epoch in epochs:
            set_epoch(rank, dataset, epoch)
            uninterrupted.append(self._read(rank, loader, None))

        legs, state, not_plain = [], None, None
        left = len(uninterrupted[0])
        for cut in self.cuts:
            dataset, loader = self._fresh(rank, state)
            set_epoch(rank, dataset, self.epoch)
            iterator = rank.call(f"in iter({self._text()})", partial(iter, loader), into_sampler=False)
            # At most the batches left, so that a cut after the last one leaves the epoch unended, as a loop
            # checkpointing at its last step does: asking for one more would end it (a cut of None).
            legs.append(self._read(rank, iterator, None if cut is None else min(cut, left)))
            left -= len(legs[-1])
            state = rank.call(f"in {self._text()}.state_dict()", loader.state_dict, into_sampler=False)
            state, why = through_checkpoint(state)  # a state that is not plain data is stream_plain_state's to charge
            not_plain = not_plain or why
            del iterator, loader  # the workers of the interrupted run stop here

        dataset, loader = self._fresh(rank, state)
        resumed = []
        for epoch in epochs[1:] if self.cuts[-1] is None else epochs:
            set_epoch(rank, dataset, epoch)
            resumed.append(self._read(rank, loader, None))
        return ResumedRank(
            rank.rank,
            (uninterrupted[0], uninterrupted[1]),
            tuple(legs),
            tuple(resumed),
            not_plain,
            has_set_epoch(dataset),
        )

    def _fresh(self, rank: RankContext, state: Any = None) -> tuple[Any, Any]:
        """A fresh dataset for this rank and a StatefulDataLoader over it, given ``state`` when there is one."""
        from torchdata.stateful_dataloader import StatefulDataLoader

        case = self.case
        options = case.factory_options(workdir_of(self.workdir_root, case))
        plug: StreamPlug = rank.plug
        dataset = rank.call(
            f"in make(N={case.dataset_size}, rank={rank.rank}, world_size={case.world_size}, ...)",
            lambda: plug.build(case.dataset_size, rank.rank, case.world_size, **options),
        )
        warnings.filterwarnings("ignore", message=".*set_vital.*")  # torchdata 0.11 calls it, deprecated in torch
        loader: Any = real_loader(case, dataset, loader_generator(case, rank.rank, 0), StatefulDataLoader)
        if state is not None:
            rank.call(
                f"in {self._text()}.load_state_dict(state)", lambda: loader.load_state_dict(state), into_sampler=False
            )
        return dataset, loader

    def _read(self, rank: RankContext, batches: Any, count: int | None) -> Batches:
        """The next ``count`` batches of a loader (a pass begun here) or of its running
        iterator, fewer if the epoch ends first; ``None``: all of them, to the epoch's end."""
        limit = read_limit(self.case.dataset_size)
        return rank.call(
            f"while iterating {self._text()}",
            lambda: tuple(
                checked(batch) for batch in (read_to_end(batches, limit) if count is None else islice(batches, count))
            ),
            into_sampler=False,
        )

    def _text(self) -> str:
        case = self.case
        return f"StatefulDataLoader(num_workers={case.num_workers}, persistent_workers={case.persistent_workers})"


def resume_stream(
    ranks: Ranks,
    plug: StreamPlug,
    contract: StreamContract,
    case: StreamCase,
    *,
    epoch: int,
    cuts: tuple[int | None, ...],
) -> StreamResume:
    """Every rank's uninterrupted and resumed StatefulDataLoader, as the view the resume checks read."""
    __tracebackhide__ = True  # failures point at the dataset, not the harness
    scenario = ResumeStream(plug.spec, contract, case, workdir_root=layouts_root(), epoch=epoch, cuts=cuts)
    replies: list[ResumedRank] = ask(ranks, scenario)
    has_epoch = all(reply.has_set_epoch for reply in replies)

    def view(at_epoch: int, per_rank: list[Batches]) -> StreamEpoch:
        return stream_epoch(case.with_(epoch=at_epoch), per_rank, has_epoch)

    ended = cuts[-1] is None  # the last checkpoint was taken at the epoch's end: nothing of it was left

    def interrupted(reply: ResumedRank) -> Batches:
        """Epoch e as the interrupted runs yielded it: the batches before every checkpoint, then the rest."""
        rest = () if ended else reply.resumed[0]
        return tuple(batch for part in (*reply.legs, rest) for batch in part)

    return StreamResume(
        cuts=cuts,
        uninterrupted=(
            view(epoch, [r.uninterrupted[0] for r in replies]),
            view(epoch + 1, [r.uninterrupted[1] for r in replies]),
        ),
        interrupted=view(epoch, [interrupted(r) for r in replies]),
        after=view(epoch + 1, [r.resumed[-1] for r in replies]),
        not_plain=next((r.not_plain for r in replies if r.not_plain), None),
        missing=replies[0].missing,
    )
