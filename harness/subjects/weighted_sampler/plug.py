"""The plug: load the weighted sampler under test from a ``MODULE:ATTR`` spec.

The spec names a factory (or a class) called once per rank: ``make(weights, *, num_replicas,
rank, num_samples, seed)`` returns that rank's sampler, an iterable of indices that may have
``set_epoch(epoch)`` and ``__len__``. ``weights`` is a list of floats, one per item, some 0;
``num_samples`` is how many indices the rank draws per epoch. ``seed`` is optional: the
invariants that need it are not applicable to a factory without one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..common.cost import at_epoch_zero
from ..specs import FactoryConvention, FactoryPlug, import_module, resolve_attribute, source_file, split_spec

DEFAULT_SPEC = "sampler_conformance.adapters.torch_weighted:make"
REQUIRED_PARAMETERS = ("num_replicas", "rank", "num_samples")
OPTIONAL_PARAMETERS = ("seed",)
SPEC_HELP = (
    "Give it as MODULE:ATTR, e.g. --sampler=sampler_conformance.adapters.torch_weighted:make "
    "or --sampler=path/to/my_sampler.py:make"
)
CONVENTION = FactoryConvention(
    call=f"make(weights, *, {', '.join((*REQUIRED_PARAMETERS, *OPTIONAL_PARAMETERS))})",
    required=REQUIRED_PARAMETERS,
    optional=OPTIONAL_PARAMETERS,
    contracts="weighted contracts",
    returns="the rank's sampler",
    guide="docs/weighted-samplers.md",
)


@dataclass(frozen=True, repr=False)
class WeightedPlug(FactoryPlug):
    """The weighted sampler factory under test and the parameters it takes."""

    worker_modules: tuple[str, ...] = ()  # no DataLoader workers read it
    needs_process_group: bool = False
    optional: ClassVar[tuple[str, ...]] = OPTIONAL_PARAMETERS
    called: ClassVar[str] = "sampler factory"

    def build(self, weights: list[float], rank: int, world_size: int, **options: Any) -> Any:
        """One rank's sampler; of ``options``, those the factory does not take are left out."""
        required = {name: options[name] for name in REQUIRED_PARAMETERS if name in options}
        return self.factory(weights, num_replicas=world_size, rank=rank, **required, **self.taken(options))


def build_for_cost(plug: Any, contract: Any, size: int, world_size: int, rank: int) -> Callable[[], Any]:
    """What the cost probe times (``harness.execution.cost``): building rank ``rank``'s sampler
    over ``size`` items of weight 1, drawing its share of an epoch (``size / world_size``), at
    epoch 0; the weights made beforehand."""
    assert isinstance(plug, WeightedPlug)
    weights = [1.0] * size
    num_samples = -(-size // world_size)
    return at_epoch_zero(lambda: plug.build(weights, rank, world_size, num_samples=num_samples, seed=0))


def load_plug(spec: str) -> WeightedPlug:
    """Resolve ``spec`` to a :class:`WeightedPlug`, or raise :class:`SpecError`."""
    module_part, attr_part = split_spec(spec, SPEC_HELP)
    module = import_module(spec, module_part, SPEC_HELP)
    factory = resolve_attribute(spec, module, attr_part, CONVENTION.described)
    accepted = CONVENTION.accepted(spec, factory)
    return WeightedPlug(spec, factory, source_file(factory, module), accepted)
