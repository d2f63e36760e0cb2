"""Resume through torchdata's ``StatefulDataLoader`` (docs/resume-and-elastic.md,
"The resume protocol", step 8).

Every rank builds its sampler from the group and hands it to a ``StatefulDataLoader`` over
the dataset, as ``sampler=`` with the case's batch size (a batch sampler as
``batch_sampler=``), with ``num_workers`` 0 or 2. The uninterrupted loader reads epoch e and
e + 1. The interrupted one takes k batches of epoch e, then ``loader.state_dict()``; the
state goes through ``torch.save``/``torch.load(weights_only=True)`` into a fresh sampler and
loader with the same arguments: ``loader.load_state_dict(state)``, ``set_epoch(e)``, the rest
of the epoch, then ``set_epoch(e + 1)`` and that epoch.

What torchdata 0.11 does with the sampler (``torchdata/stateful_dataloader``):

- It wraps an index sampler in its own ``BatchSampler``, whose iterator's state holds the
  sampler's ``state_dict()``; a batch sampler's ``state_dict()`` is taken as it is.
- ``num_workers=0``: ``loader.state_dict()`` asks the sampler for its state then and there.
- With workers, the main process draws batches ahead of the loop (``prefetch_factor`` per
  worker) and, as it draws each one, keeps the sampler's ``state_dict()`` of that moment;
  ``loader.state_dict()`` returns the one kept for the last batch the loop took. A sampler
  whose ``state_dict()`` hands out its own live dict lets the prefetch move that kept state
  on, so the resume starts where the prefetch was, not where the loop was.
- ``load_state_dict`` only stores the state: the next ``iter(loader)`` builds the iterator,
  calls ``iter(sampler)`` (twice with workers), then the sampler's ``load_state_dict`` and
  ``iter(sampler)`` again, the one it reads. So the loop's ``set_epoch(e)`` comes before
  the sampler's ``load_state_dict``.
- Its batch sampler reads past a rank's last item to fill a short last batch, so the
  sampler's pass ends when the loader draws that batch, before the loop has taken it.
- A loader state taken once its iterator has raised StopIteration says the iterator
  finished; the next ``iter(loader)`` then drops the restored iterator (after it has
  loaded the sampler's state and called ``iter(sampler)``) and starts a fresh pass. So k is
  cut to the batches of the rank's epoch: the checkpoint follows the k-th batch, and the
  iterator is never run to its end, as in-process (step 2).

Loader workers come from a forkserver, as in ``harness.subjects.index_sampler.scenarios.loader``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from sampler_conformance.core.case import NoLen, Observation
from sampler_conformance.core.counting import batch_count
from sampler_conformance.execution.checkpoint import missing_methods, through_checkpoint
from sampler_conformance.execution.collectives import loader_worker_options
from sampler_conformance.execution.global_rng import seed_global_rngs
from sampler_conformance.execution.scenario import RankContext, Ranks, ask
from sampler_conformance.subjects.common.index_dataset import IndexDataset, collate_indices
from sampler_conformance.subjects.common.reading import read_limit

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug
from ..runs import ResumeRun
from . import SamplerScenario
from .steps import Build, build, has_set_epoch, set_epoch

# What the loader it drives is, for messages.
LOADER = "torchdata's StatefulDataLoader"

Batches = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class LoaderResumedRank:
    rank: int
    uninterrupted: tuple[Batches, ...]  # epoch e, e + 1
    consumed: Batches  # the k batches before loader.state_dict()
    resumed: tuple[Batches, ...]  # the rest of epoch e after the resume, then epoch e + 1
    missing: tuple[str, ...] = ()  # Stateful methods the sampler lacks: nothing was resumed
    has_set_epoch: bool = True


@dataclass(frozen=True)
class ResumeThroughLoader(SamplerScenario):
    epoch: int = 0
    cut: int = 0  # batches the loop takes before loader.state_dict()
    num_workers: int = 0

    def run(self, rank: RankContext) -> LoaderResumedRank:
        seed_global_rngs(0)
        sampler, loader = self._built(rank)
        uninterrupted = []
        for epoch in (self.epoch, self.epoch + 1):
            set_epoch(rank, sampler, epoch)
            uninterrupted.append(self._batches(rank, loader, read_limit(self.case.dataset_size) + 1))
        missing = missing_methods(sampler)
        if missing:
            return LoaderResumedRank(rank.rank, tuple(uninterrupted), (), (), missing=missing)

        seed_global_rngs(0)
        sampler, loader = self._built(rank)
        set_epoch(rank, sampler, self.epoch)
        iterator = rank.call(f"in iter({self._loader_text()})", lambda: iter(loader), into_sampler=False)
        # Cut to the rank's epoch, as in-process: taking more would run the iterator to its
        # end, a loop that finished the epoch, which torchdata resumes at a fresh pass.
        consumed = self._batches(rank, iterator, min(self.cut, len(uninterrupted[0])))
        state = rank.call(f"in {self._loader_text()}.state_dict()", loader.state_dict, into_sampler=False)
        state, _ = through_checkpoint(state)  # a state that is not plain data is plain_state's to charge
        del iterator, loader  # the workers of the interrupted run stop here

        seed_global_rngs(0)
        sampler, loader = self._built(rank)
        rank.call(
            f"in {self._loader_text()}.load_state_dict(state)",
            lambda: loader.load_state_dict(state),
            into_sampler=False,
        )
        resumed = []
        for epoch in (self.epoch, self.epoch + 1):
            set_epoch(rank, sampler, epoch)
            resumed.append(self._batches(rank, loader, read_limit(self.case.dataset_size) + 1))
        return LoaderResumedRank(
            rank.rank, tuple(uninterrupted), consumed, tuple(resumed), has_set_epoch=has_set_epoch(sampler)
        )

    def _built(self, rank: RankContext) -> tuple[Any, Any]:
        """This rank's sampler, built from the group, and a StatefulDataLoader over it."""
        from torchdata.stateful_dataloader import StatefulDataLoader

        sampler = build(rank, self.case, self.contract, Build.GROUP)
        # A batch sampler goes in as batch_sampler=, with the batch size and drop_last it was built with.
        batching = (
            dict(batch_sampler=sampler)
            if self.contract.yields_batches
            else dict(sampler=sampler, batch_size=self.case.batch_size)
        )
        with warnings.catch_warnings():  # torchdata 0.11 calls torch.set_vital, deprecated in torch
            warnings.filterwarnings("ignore", message=".*set_vital.*")
            loader = StatefulDataLoader(
                IndexDataset(self.case.dataset_size),
                **batching,
                num_workers=self.num_workers,
                **loader_worker_options(self.num_workers),
                collate_fn=collate_indices,  # as harness.subjects.index_sampler.scenarios.loader: an empty batch stays one
            )
        return sampler, loader

    def _batches(self, rank: RankContext, batches: Any, count: int) -> Batches:
        """The next ``count`` batches of a loader (a pass begun here) or of its running
        iterator, fewer if the epoch ends first."""
        return rank.call(
            f"while iterating {self._loader_text()}",
            lambda: tuple(batch.numpy().astype(np.int64) for batch in islice(batches, count)),
            into_sampler=False,
        )

    def _loader_text(self) -> str:
        return f"StatefulDataLoader(num_workers={self.num_workers})"


def loader_batches(contract: SamplerContract, case: IndexCase, pass_items: int) -> int:
    """The batches a pass of ``pass_items`` items (batches, for a batch sampler) makes in the loader."""
    return pass_items if contract.yields_batches else batch_count(pass_items, max(case.batch_size, 1))


def resume_through_loader(
    ranks: Ranks,
    plug: SamplerPlug,
    contract: SamplerContract,
    case: IndexCase,
    *,
    epoch: int,
    cut: int,
    num_workers: int,
) -> ResumeRun:
    """Every rank's uninterrupted and resumed StatefulDataLoader, as a :class:`ResumeRun` whose
    items are the loader's batches: ``joined`` and the resume checkers read it as they read a
    sampler's own resume."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    replies: list[LoaderResumedRank] = ask(
        ranks, ResumeThroughLoader(plug.spec, contract, case, epoch, cut, num_workers)
    )
    has_epoch = all(reply.has_set_epoch for reply in replies)

    def observation(per_rank: list[Batches], at_epoch: int) -> Observation[IndexCase]:
        indices = tuple(np.concatenate(b) if b else np.empty(0, dtype=np.int64) for b in per_rank)
        return Observation(
            case.with_(epoch=at_epoch if has_epoch else None),
            indices,
            tuple(NoLen.NOT_ASKED for _ in per_rank),
            tuple(per_rank),
        )

    def observations(pick: Any) -> tuple[Observation[IndexCase], ...]:
        per_rank = [pick(reply) for reply in replies]
        count = min(len(epochs) for epochs in per_rank)
        return tuple(observation([epochs[k] for epochs in per_rank], epoch + k) for k in range(count))

    return ResumeRun(
        epoch=epoch,
        uninterrupted=observations(lambda r: r.uninterrupted),
        consumed=observations(lambda r: (r.consumed,)),
        resumed=observations(lambda r: r.resumed),
        first_resumed_epoch=epoch,
        not_plain=(),
        missing=replies[0].missing,
        has_set_epoch=has_epoch,
    )
