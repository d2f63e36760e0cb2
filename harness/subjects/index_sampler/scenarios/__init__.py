"""Scenarios: what a rank does with the sampler for one request, written once for both runners.

A scenario is a frozen dataclass: the sampler's spec, the contract, the case, and its own
parameters (which epochs, which builds, ...). Its :meth:`Scenario.run` does the work of
one rank, step by step (``harness.subjects.index_sampler.scenarios.steps``), and returns that rank's reply.

- In a real process group (``conformance/``) every rank process runs it once, as its rank.
- In-process (``properties/``) one supervised sampler process runs it once per simulated
  rank, with explicit ``num_replicas``/``rank`` (``harness.execution.simulator``).

Both are the rank pool of ``harness.execution.rank_pool``: it sends the scenario, bounds each call
into the sampler by ``--rank-timeout``, and turns an exception, a death or a hang into
evidence. Each scenario module also turns the ranks' replies into what the checkers read.

A new scenario (resume from a state_dict, IterableDataset sharding) is one new module
here: the rank processes, the sampler process and the pool run it unchanged.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from sampler_conformance.core.case import Case
from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.evidence import SamplerFault
from sampler_conformance.pytest_plugin.crashes import set_aside_or_raise

from .steps import RankContext


@dataclass(frozen=True)
class Scenario:
    """One request: every rank runs it once (simulated ranks: once each, in turn)."""

    spec: str  # the sampler under test, MODULE:ATTR
    contract: Contract  # how to read it: finite or a prefix, indices or batches
    case: Case

    def run(self, rank: RankContext) -> Any:
        """This rank's part; calls into the sampler go through ``rank.call``."""
        raise NotImplementedError

    def simulated_ranks(self) -> int:
        """How many ranks the sampler process simulates for this scenario."""
        return self.case.world_size


class Ranks(Protocol):
    """Who runs a scenario: a real process group's rank pool, or the in-process sampler process."""

    def request(self, scenario: Scenario) -> list[Any]:
        """Every rank's reply, in rank order."""


# Replies kept per ranks (a pool, or the sampler process), most recent last.
REPLIES_KEPT = 256
_replies: weakref.WeakKeyDictionary[Any, OrderedDict[Scenario, list[Any]]] = weakref.WeakKeyDictionary()


def ask(ranks: Ranks, scenario: Scenario) -> list[Any]:
    """Every rank's reply to ``scenario``. A sampler that raised is set aside when the running
    test judges another invariant (``harness.pytest_plugin.crashes``), else its fault is raised.

    The same request is run once per session: every test draws its cases from the same seed,
    so the tests of several invariants draw the same cases, and each judges its own invariant
    on the one reading of the case (a sampler that changes between readings is judged by the
    scenarios that read it twice themselves). Faults are not kept: a request that failed is
    sent again."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    kept = _replies.setdefault(ranks, OrderedDict())
    try:
        replies = kept[scenario]
    except KeyError:
        pass
    except TypeError:  # a request carrying something unhashable (a state dict): always sent
        return _send(ranks, scenario)
    else:
        kept.move_to_end(scenario)
        return replies
    replies = _send(ranks, scenario)
    kept[scenario] = replies
    if len(kept) > REPLIES_KEPT:
        kept.popitem(last=False)
    return replies


def _send(ranks: Ranks, scenario: Scenario) -> list[Any]:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    try:
        return ranks.request(scenario)
    except SamplerFault as fault:
        set_aside_or_raise(fault)
