"""What the resumable and elastic tests draw, for both runners: the case, the epoch, where the
checkpoint is taken and the world sizes resumed on (``properties/test_resume.py``,
``properties/test_elastic.py`` and their counterparts in ``conformance/``)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from sampler_conformance.core.counting import batch_count

from .case import IndexCase
from .contracts import SamplerContract
from .draws import MAX_WORLD_SIZE, draw_case, epochs, world_sizes
from .plug import SamplerPlug
from .resume_labels import CHECKPOINT_LABEL, EPOCH_LABEL

GLOBAL_SEEDS = st.integers(0, 2**32 - 2)
# Every rank reads three to six passes per example: the dataset sizes stop at 2,000 here (edges
# included) to keep the resumable tests within the time of the base contract's.
MAX_RESUMED_SIZE = 2_000


def pass_items(contract: SamplerContract, case: IndexCase) -> int:
    """Items one rank's pass holds under the contract (batches for a batch sampler; an upper
    bound the scenario clamps to what the pass really holds)."""
    if contract.yields_batches:
        return batch_count(batch_count(case.dataset_size, case.batch_size, case.drop_last), case.world_size)
    return contract.expected_length(case.dataset_size, case.world_size, case.drop_last)


def checkpoint_at(
    data: st.DataObject, length: int, label: str = CHECKPOINT_LABEL, *, ends_weighted: bool = True
) -> int:
    """A position in a pass of ``length`` items; its start and its end weighted, unless the
    test's bugs live in between (an elastic cursor: a resume at 0 is a fresh start)."""
    positions = st.integers(0, length)
    return data.draw(st.one_of(st.sampled_from([0, length]), positions) if ends_weighted else positions, label=label)


def drawn(
    data: st.DataObject,
    plug: SamplerPlug,
    contract: SamplerContract,
    drop_last: bool,
    world_size: int | None = None,
    max_dataset_size: int = MAX_RESUMED_SIZE,
) -> tuple[IndexCase, int]:
    """A case (of ``world_size`` ranks when given: a real group's) and the epoch interrupted."""
    case = draw_case(
        data, plug, drop_last=drop_last, contract=contract, world_size=world_size, max_dataset_size=max_dataset_size
    )
    return case, data.draw(epochs(), label=EPOCH_LABEL)


def leg_items(contract: SamplerContract, case: IndexCase, world_size: int, consumed: int) -> int:
    """Items (batches for a batch sampler) one rank's pass holds on ``world_size`` ranks after
    ``consumed`` units of the epoch's global order, the rest dealt by the contract's length
    rule: taking no more leaves a conforming sampler's pass unfinished, a mid-epoch state."""
    size, drop_last = case.dataset_size, case.drop_last
    if contract.yields_batches:
        epoch_units = batch_count(size, case.batch_size, drop_last)
    else:
        epoch_units = size - size % case.world_size if drop_last else size
    rest = max(epoch_units - consumed, 0)
    return rest // world_size if drop_last else math.ceil(rest / world_size)


def other_world_size(data: st.DataObject, world_size: int, label: str) -> int:
    """A world size other than ``world_size``, as :func:`draws.world_sizes` draws them
    (one fewer to draw from, those from ``world_size`` on moved up one: no filter to reject)."""
    return data.draw(world_sizes(MAX_WORLD_SIZE - 1).map(lambda w: w if w < world_size else w + 1), label=label)
