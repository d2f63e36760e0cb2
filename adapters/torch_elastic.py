"""torch's ElasticDistributedSampler (``torch.distributed.elastic.utils.data``), contract
``torch+elastic``.

It resumes by construction: ``ElasticDistributedSampler(dataset, num_replicas, rank,
start_index=s)`` samples the epoch from index s on ("Which index of the dataset to start
sampling from", its docstring), s being the count of the epoch's samples the whole job
consumed before the restart (pytorch/pytorch #147967). It keeps no state of its own, so the
factory plays the training loop's part: ``state_dict()`` is ``{"start_index": s}``, the
start it was built with plus this rank's items times the world size (the ranks step in
lockstep), and ``load_state_dict(state)`` rebuilds the sampler with that start for the
next pass. Read charitably: once a pass ends, the next epoch starts again from index 0, and
a loop resumed from a state taken then knows that epoch is done (``ended``: a DataLoader
ends the pass while filling its last batch, before the loop has taken it).
It has no ``seed``, ``shuffle`` or ``drop_last`` (it always shuffles, seeded with the epoch).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class _StartIndexResume:
    """ElasticDistributedSampler, rebuilt with ``start_index`` as an elastic loop resumes it."""

    def __init__(self, sampler_class: Any, dataset: Any, num_replicas: int | None, rank: int | None) -> None:
        self._sampler_class, self._dataset = sampler_class, dataset
        self._num_replicas, self._rank = num_replicas, rank
        self.epoch = 0
        self.start = 0  # start_index of the current pass
        self.yielded = 0  # items this rank yielded in the current pass
        self.ended: int | None = None  # the epoch whose pass ended, until the next pass begins
        self.resumed_ended: int | None = None  # a loaded state's ended: nothing of that epoch is left
        self.sampler = self._built()

    def _built(self) -> Any:
        sampler = self._sampler_class(self._dataset, self._num_replicas, self._rank, start_index=self.start)
        sampler.set_epoch(self.epoch)
        return sampler

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.sampler.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.sampler)

    def __iter__(self) -> Iterator[int]:
        ended, self.resumed_ended = self.resumed_ended, None
        self.yielded, self.ended = 0, None
        if ended != self.epoch:
            for index in self.sampler:
                self.yielded += 1
                yield index
        self.start = self.yielded = 0
        self.ended = self.epoch
        self.sampler = self._built()

    def state_dict(self) -> dict[str, int | None]:
        return {"start_index": self.start + self.yielded * self.sampler.num_replicas, "ended": self.ended}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.start, self.yielded, self.resumed_ended = state["start_index"], 0, state["ended"]
        self.sampler = self._built()


def ElasticDistributedSampler(dataset: Any, num_replicas: int | None = None, rank: int | None = None) -> Any:
    from torch.distributed.elastic.utils.data import elastic_distributed_sampler

    return _StartIndexResume(elastic_distributed_sampler.ElasticDistributedSampler, dataset, num_replicas, rank)
