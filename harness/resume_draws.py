"""What the resumable tests draw, for both runners: the case, the epoch and where the
checkpoint is taken (``properties/test_resume.py``, ``conformance/test_resume_groups.py``)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from .case import Case
from .contracts import Contract
from .plug import SamplerPlug
from .strategies import draw_case, epochs

GLOBAL_SEEDS = st.integers(0, 2**32 - 2)
# Every rank reads three to six passes per example: the dataset sizes stop at 2,000 here (edges
# included) to keep the resumable tests within the time of the base contract's.
MAX_RESUMED_SIZE = 2_000


def pass_items(contract: Contract, case: Case) -> int:
    """Items one rank's pass holds under the contract (batches for a batch sampler; an upper
    bound the scenario clamps to what the pass really holds)."""
    length = contract.expected_length(case.dataset_size, case.world_size, case.drop_last)
    if contract.yields_batches:
        return math.ceil(math.ceil(case.dataset_size / case.batch_size) / case.world_size)
    return length


def checkpoint_at(data: st.DataObject, length: int, label: str = "k (items before the checkpoint)") -> int:
    """A position in a pass of ``length`` items; its start and its end weighted."""
    return data.draw(st.one_of(st.sampled_from([0, length]), st.integers(0, length)), label=label)


def drawn(
    data: st.DataObject, plug: SamplerPlug, contract: Contract, drop_last: bool, world_size: int | None = None
) -> tuple[Case, int]:
    """A case (of ``world_size`` ranks when given: a real group's) and the epoch interrupted."""
    case = draw_case(
        data, plug, drop_last=drop_last, contract=contract, world_size=world_size, max_dataset_size=MAX_RESUMED_SIZE
    )
    return case, data.draw(epochs(), label="epoch")
