"""What the checks read: the views of what every rank drew, made from the scenario's replies
(``scenarios.read_epochs``). The checks import these, never the scenarios rank processes run."""

from __future__ import annotations

from dataclasses import dataclass

from sampler_conformance.core.case import Observation

from .case import WeightedCase


@dataclass(frozen=True)
class DrawnEpoch:
    """What the checks read: every rank's draws of one epoch, and whether set_epoch was there to call."""

    observation: Observation[WeightedCase]
    has_set_epoch: bool

    @property
    def case(self) -> WeightedCase:
        case = self.observation.case
        assert isinstance(case, WeightedCase)
        return case
