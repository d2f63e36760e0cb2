"""Scenarios: what a rank does with the sampler for one request, written once for both runners.

A scenario is a frozen dataclass (``harness.execution.scenario.Scenario``): the sampler's spec,
the contract, the case, and its own parameters (which epochs, which builds, ...). Its ``run``
does the work of one rank, step by step (``harness.subjects.index_sampler.scenarios.steps``),
and returns that rank's reply; :meth:`SamplerScenario.load` loads the sampler's plug.

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

from dataclasses import dataclass

from sampler_conformance.execution.scenario import Scenario

from ..case import IndexCase
from ..contracts import SamplerContract
from ..plug import SamplerPlug, load_plug


@dataclass(frozen=True)
class SamplerScenario(Scenario):
    """A scenario of the index sampler: ``spec`` names the sampler, loaded with its plug."""

    contract: SamplerContract
    case: IndexCase

    def load(self) -> SamplerPlug:
        return load_plug(self.spec)
