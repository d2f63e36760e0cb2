"""The plug: load the batch sampler under test from a ``MODULE:ATTR`` spec.

The spec names a factory (or a class) called once per rank: ``make(lengths, *,
num_replicas, rank, max_tokens, seed)`` under ``dynamic_batches``, ``make(lengths, *,
num_replicas, rank, batch_size, seed)`` under ``micro_batches``, ``make(lengths, *,
num_replicas, rank, sample_rate, seed)`` under ``poisson``. It returns that rank's batch
sampler: an iterable of batches, each a list of int indices, which may have
``set_epoch(epoch)`` and ``__len__`` (the number of batches). ``lengths`` is a list of ints,
one per item. ``seed`` is optional: the invariants that need it are not applicable to a
factory without one.

A batch's cost is the sum of its items' lengths, unless the factory says otherwise with an
attribute: ``make.batch_cost = "padded"`` for samplers that budget the padded batch, its
longest item times its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import Plug, SpecError

from ..common.cost import at_epoch_zero
from ..specs import (
    GROUP_ATTRIBUTE,
    FactoryConvention,
    FactoryPlug,
    import_module,
    resolve_attribute,
    source_file,
    split_spec,
)
from .contracts import BatchContract

DEFAULT_SPEC = "sampler_conformance.adapters.budget_batches:make"
REQUIRED_PARAMETERS = ("num_replicas", "rank")
# The parameter a contract is about (BatchContract.parameter) is required under it; seed never is.
OPTIONAL_PARAMETERS = ("max_tokens", "batch_size", "sample_rate", "seed")
COST_ATTRIBUTE = "batch_cost"
COSTS = ("sum", "padded")
SPEC_HELP = (
    "Give it as MODULE:ATTR, e.g. --sampler=sampler_conformance.adapters.budget_batches:make "
    "or --sampler=path/to/my_sampler.py:make"
)
CONVENTION = FactoryConvention(
    call="make(lengths, *, num_replicas, rank, max_tokens or batch_size or sample_rate, seed)",
    required=REQUIRED_PARAMETERS,
    optional=OPTIONAL_PARAMETERS,
    contracts="batch contracts",
    returns="the rank's batch sampler",
    guide="docs/batch-samplers.md",
)


@dataclass(frozen=True, repr=False)
class BatchPlug(FactoryPlug):
    """The batch sampler factory under test, the parameters it takes and how it costs a batch."""

    cost: str = "sum"
    worker_modules: tuple[str, ...] = ()  # no DataLoader workers read it
    needs_process_group: bool = False
    optional: ClassVar[tuple[str, ...]] = ("seed",)
    called: ClassVar[str] = "batch sampler factory"

    def build(self, lengths: list[int], rank: int, world_size: int, **options: Any) -> Any:
        """One rank's batch sampler; of ``options``, those the factory does not take are left out."""
        return self.factory(lengths, num_replicas=world_size, rank=rank, **self.taken(options))

    def batch_costs(self, lengths: np.ndarray, batch: np.ndarray) -> int:
        """What ``batch`` costs against the budget, by the sampler's declared rule."""
        taken = lengths[batch]
        if not taken.size:
            return 0
        return int(taken.max()) * int(taken.size) if self.cost == "padded" else int(taken.sum())


# The cost probe's batches: items of length 1, COST_BATCH to a batch (a budget of COST_BATCH
# tokens, a global step of COST_BATCH per rank, or each item drawn at rate 1 / COST_BATCH).
COST_BATCH = 8


def build_for_cost(plug: Plug, contract: Contract, size: int, world_size: int, rank: int) -> Callable[[], Any]:
    """What the cost probe times (``harness.execution.cost``): building rank ``rank``'s batch
    sampler over ``size`` items of length 1, at epoch 0, the lengths made beforehand; its
    items are batches of about COST_BATCH items."""
    assert isinstance(plug, BatchPlug) and isinstance(contract, BatchContract)
    lengths = [1] * size
    options = {
        "seed": 0,
        "max_tokens": COST_BATCH,
        "batch_size": COST_BATCH * world_size,
        "sample_rate": 1 / COST_BATCH,
    }
    return at_epoch_zero(lambda: plug.build(lengths, rank, world_size, **options))


def load_plug(spec: str) -> BatchPlug:
    """Resolve ``spec`` to a :class:`BatchPlug`, or raise :class:`SpecError`."""
    module_part, attr_part = split_spec(spec, SPEC_HELP)
    module = import_module(spec, module_part, SPEC_HELP)
    factory = resolve_attribute(spec, module, attr_part, CONVENTION.described)
    accepted = CONVENTION.accepted(spec, factory)
    cost = getattr(factory, COST_ATTRIBUTE, "sum")
    if cost not in COSTS:
        raise SpecError(
            f"--sampler={spec!r}: its {COST_ATTRIBUTE} is {cost!r}; declare one of {', '.join(map(repr, COSTS))} "
            f"(sum: the items' lengths added up; padded: the longest item times the batch size)."
        )
    # GROUP_ATTRIBUTE: a sampler that rebalances across the group's ranks (fairchem's
    # BalancedBatchSampler) is judged in real groups only.
    needs_group = getattr(factory, GROUP_ATTRIBUTE, False) is True
    return BatchPlug(spec, factory, source_file(factory, module), accepted, cost, needs_process_group=needs_group)


def check_fit(plug: Plug, contract: Contract) -> None:
    """A SpecError unless the factory takes what ``contract`` gives it (the budget, the step's size or the rate)."""
    assert isinstance(plug, BatchPlug) and isinstance(contract, BatchContract)
    if not plug.supports(contract.parameter):
        raise SpecError(
            f"--sampler={plug.spec!r}: the factory takes no {contract.parameter!r}, which --contract={contract.name} "
            f"gives it: {CONVENTION.call}. Write a factory that passes it on to "
            f"the sampler (docs/batch-samplers.md), or choose the contract the sampler follows "
            f"(--list-contracts)."
        )
