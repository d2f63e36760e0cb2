"""Resume a stream through torchdata's ``StatefulDataLoader``, as training loops do
(docs/streaming-datasets.md, "Resume").

Every rank builds its dataset and a ``StatefulDataLoader`` over it (the case's workers,
persistent or not, and batch size), and reads one request, which all the resume tests judge:

1. The uninterrupted loader reads epochs e and e + 1, ``set_epoch`` before each.
2. A fresh dataset and loader, ``set_epoch(e)``, k batches (``None``: the whole epoch),
   ``loader.state_dict()``: checkpoint 1. Each state goes through ``torch.save`` and
   ``torch.load(weights_only=True)``, as a checkpoint file carries it.
3. A fresh dataset and loader resume it: ``loader.load_state_dict(state)``, ``set_epoch``
   of the epoch checkpoint 1 left unfinished (e + 1 if it ended e), k' batches,
   checkpoint 2 (the iterator goes on), the rest of that epoch, and, when it was e, epoch
   e + 1.
4. A fresh dataset and loader resume checkpoint 2 and read the rest of its epoch.

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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any, ClassVar

from sampler_conformance.execution.checkpoint import missing_methods, through_checkpoint
from sampler_conformance.execution.scenario import RankContext, Ranks, Scenario, ask
from sampler_conformance.subjects.common.reading import read_limit

from .case import StreamCase
from .contracts import StreamContract
from .items import Batch, checked
from .loading import has_set_epoch, loader_generator, read_to_end, real_loader, set_epoch
from .plug import StreamPlug, build_dataset, load_plug
from .runs import StreamEpoch, StreamResume
from .scenarios import layouts_root, stream_epoch, workdir_of

Batches = tuple[Batch, ...]


@dataclass(frozen=True)
class ResumedRank:
    rank: int
    uninterrupted: tuple[Batches, Batches]  # epochs e and e + 1
    first: Batches  # before checkpoint 1
    resumed: Batches  # after resuming checkpoint 1, before checkpoint 2
    resumed_rest: Batches  # the rest of that epoch, the same loader going on
    resumed_next: Batches  # then epoch e + 1 (nothing when checkpoint 1 ended epoch e)
    resumed_again: Batches  # after resuming checkpoint 2, the rest of its epoch
    not_plain: str | None  # why a state could not go through torch.save/torch.load(weights_only=True)
    has_set_epoch: bool
    missing: tuple[str, ...] = ()  # Stateful methods the dataset lacks: nothing was read


@dataclass(frozen=True)
class ResumeStream(Scenario):
    noun: ClassVar[str] = "dataset"
    contract: StreamContract
    case: StreamCase
    workdir_root: str
    epoch: int
    first_cut: int | None  # batches before checkpoint 1; None: the whole epoch e
    second_cut: int  # batches after resuming it, before checkpoint 2

    def load(self) -> StreamPlug:
        return load_plug(self.spec)

    def run(self, rank: RankContext) -> ResumedRank:
        # torchdata logs a warning on every resume of a dataset without state_dict (fast-forwarded).
        logging.getLogger("torchdata.stateful_dataloader.stateful_dataloader").setLevel(logging.ERROR)
        e = self.epoch
        dataset, loader = self._fresh(rank)
        missing = missing_methods(dataset)
        if missing:  # fast-forwarded by the loader, not resumed: the checks charge it at once
            return ResumedRank(rank.rank, ((), ()), (), (), (), (), (), None, has_set_epoch(dataset), missing)
        uninterrupted = []
        for epoch in (e, e + 1):
            set_epoch(rank, dataset, epoch)
            uninterrupted.append(self._read(rank, loader, None))

        # At most the batches left, so that a cut after the last one leaves the epoch unended, as a loop
        # checkpointing at its last step does: asking for one more would end it (a first cut of None).
        ended = self.first_cut is None
        first_cut = None if ended else min(self.first_cut or 0, len(uninterrupted[0]))
        _, loader, iterator = self._started(rank, None, e)
        first = self._read(rank, iterator, first_cut)
        state1, why1 = self._checkpoint(rank, loader)
        del iterator, loader  # the workers of the interrupted run stop here

        resumed_epoch = e + 1 if ended else e
        second_cut = min(self.second_cut, len(uninterrupted[resumed_epoch - e]) - len(() if ended else first))
        dataset, loader, iterator = self._started(rank, state1, resumed_epoch)
        resumed = self._read(rank, iterator, second_cut)
        state2, why2 = self._checkpoint(rank, loader)
        resumed_rest = self._read(rank, iterator, None)
        resumed_next: Batches = ()
        if not ended:
            set_epoch(rank, dataset, e + 1)
            resumed_next = self._read(rank, loader, None)
        del iterator, loader  # the workers of the resumed run stop here

        dataset, loader, iterator = self._started(rank, state2, resumed_epoch)
        resumed_again = self._read(rank, iterator, None)
        return ResumedRank(
            rank.rank,
            (uninterrupted[0], uninterrupted[1]),
            first,
            resumed,
            resumed_rest,
            resumed_next,
            resumed_again,
            why1 or why2,
            has_set_epoch(dataset),
        )

    def _started(self, rank: RankContext, state: Any, epoch: int) -> tuple[Any, Any, Any]:
        """A fresh dataset and loader (given ``state``, if any), ``set_epoch(epoch)``, and the loader's iterator."""
        dataset, loader = self._fresh(rank, state)
        set_epoch(rank, dataset, epoch)
        iterator = rank.call(f"in iter({self._text()})", partial(iter, loader), into_sampler=False)
        return dataset, loader, iterator

    def _checkpoint(self, rank: RankContext, loader: Any) -> tuple[Any, str | None]:
        """``loader.state_dict()`` after its trip through a checkpoint file, and why it could not make it, if so."""
        state = rank.call(f"in {self._text()}.state_dict()", loader.state_dict, into_sampler=False)
        return through_checkpoint(state)  # a state that is not plain data is stream_plain_state's to charge

    def _fresh(self, rank: RankContext, state: Any = None) -> tuple[Any, Any]:
        """A fresh dataset for this rank and a StatefulDataLoader over it, given ``state`` when there is one."""
        from torchdata.stateful_dataloader import StatefulDataLoader

        case = self.case
        options = case.factory_options(workdir_of(self.workdir_root, case))
        plug: StreamPlug = rank.plug
        dataset = build_dataset(rank, plug, case, rank.rank, options)
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
    first_cut: int | None,
    second_cut: int,
) -> StreamResume:
    """Every rank's uninterrupted and resumed StatefulDataLoaders, as the view the resume checks read."""
    __tracebackhide__ = True  # failures point at the dataset, not the harness
    scenario = ResumeStream(
        plug.spec, contract, case, workdir_root=layouts_root(), epoch=epoch, first_cut=first_cut, second_cut=second_cut
    )
    replies: list[ResumedRank] = ask(ranks, scenario)
    has_epoch = all(reply.has_set_epoch for reply in replies)
    ended = first_cut is None  # checkpoint 1 was taken at the end of epoch e: the resumed epoch is e + 1

    def view(at_epoch: int, part: Callable[[ResumedRank], Batches]) -> StreamEpoch:
        return stream_epoch(case.with_(epoch=at_epoch), [part(r) for r in replies], has_epoch)

    def first(reply: ResumedRank) -> Batches:
        return () if ended else reply.first  # an ended epoch e is not part of the resumed one

    return StreamResume(
        first_cut=first_cut,
        second_cut=second_cut,
        uninterrupted=(view(epoch, lambda r: r.uninterrupted[0]), view(epoch + 1, lambda r: r.uninterrupted[1])),
        resumed_once=view(epoch, lambda r: r.first if ended else r.first + r.resumed + r.resumed_rest),
        resumed_twice=view(epoch + ended, lambda r: first(r) + r.resumed + r.resumed_again),
        after=view(epoch + 1, lambda r: r.resumed + r.resumed_rest if ended else r.resumed_next),
        not_plain=next((r.not_plain for r in replies if r.not_plain), None),
        missing=replies[0].missing,
    )
