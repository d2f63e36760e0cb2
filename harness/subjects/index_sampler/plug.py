"""The plug: load the sampler under test from a ``MODULE:ATTR`` spec.

The spec names a class or a factory called the way DistributedSampler is:
``Attr(dataset, num_replicas=W, rank=r, shuffle=..., seed=..., drop_last=...)``.
``MODULE`` is a dotted module name, or a path to a ``.py`` file. The plug inspects the
signature once, so the suite knows which optional parameters the sampler accepts and
can skip (never silently pass) the properties that need a missing one. A spec ``INNER
sharded with NAME`` (``--shard-with``) names a sampler with no rank of its own and the
library's wrapper (``wrappers.py``) that shards it on each rank.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch.distributed as dist

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import Plug, SpecError

from ..common.cost import at_epoch_zero
from ..common.index_dataset import IndexDataset
from ..specs import (
    GROUP_ATTRIBUTE,
    MESH_PARAMETER,
    import_module,
    keyword_parameters,
    names_parameter,
    required_parameters,
    resolve_attribute,
    source_file,
    split_spec,
)
from .case import IndexCase
from .contracts import LEAST_LABELLED_BATCH, SamplerContract
from .wrappers import WRAPPERS, Wrapper, split_sharded

DEFAULT_SPEC = "torch.utils.data.distributed:DistributedSampler"

# Parameters a sampler may lack; the properties that need them are skipped.
OPTIONAL_PARAMETERS = ("shuffle", "seed", "drop_last")
# The other name samplers give the number of ranks; one that takes it is called by it.
WORLD_SIZE_ALIAS = "world_size"
# A factory that sets GROUP_ATTRIBUTE (specs) reads its rank from the process group: it is
# built with neither num_replicas nor rank, in real groups only.

SPEC_HELP = (
    "Give it as MODULE:ATTR, e.g. --sampler=torch.utils.data.distributed:DistributedSampler "
    "or --sampler=path/to/my_sampler.py:MySampler"
)
# What the spec must name, in the words of an error.
# What the DataLoader workers of a rank's loader scenarios start with imported.
LOADER_WORKER_MODULES = ("sampler_conformance.subjects.common.index_dataset", "torchdata.stateful_dataloader")
CONVENTION = "a sampler class or a factory called as Attr(dataset, num_replicas=W, rank=r, ...)"


@dataclass(frozen=True, repr=False)
class SamplerPlug:
    """The sampler under test and what it accepts."""

    spec: str
    factory: Callable[..., Any]
    source_file: str | None
    accepted: frozenset[str]
    # True: the sampler takes num_replicas/rank from the process group (mmengine, detectron2),
    # so only real process groups (conformance/) can run it. See GROUP_ATTRIBUTE.
    needs_process_group: bool = False
    # What shards the sampler, which then has no rank of its own (--shard-with); None: it shards itself.
    wrapper: Wrapper | None = None
    # It takes device_mesh= (MESH_PARAMETER): on a mesh it is given the mesh instead of
    # num_replicas/rank, and finds its data coordinates there (docs/meshes.md).
    takes_mesh: bool = False
    # What it calls the number of ranks: num_replicas as DistributedSampler does, or world_size.
    world_size_name: str = "num_replicas"

    def __repr__(self) -> str:  # short: Hypothesis prints it in every falsifying example
        return f"SamplerPlug({self.spec!r})"

    def _repr_pretty_(self, printer, cycle) -> None:  # the IPython protocol Hypothesis's printer follows
        printer.text(repr(self))

    @property
    def worker_modules(self) -> tuple[str, ...]:
        """The sampler runs in the rank's main process; the loader's workers read the suite's
        IndexDataset, through torchdata's StatefulDataLoader in the resume scenarios."""
        return LOADER_WORKER_MODULES

    def supports(self, parameter: str) -> bool:
        return parameter in self.accepted

    @property
    def is_factory(self) -> bool:
        """The spec names a function that builds the sampler (an adapter), not its class: the
        defaults a certification sees are the factory's, which may not be the sampler's own."""
        return not inspect.isclass(self.factory)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(p for p in OPTIONAL_PARAMETERS if p not in self.accepted)

    @staticmethod
    def missing_reason(parameter: str) -> str:
        return f"sampler has no `{parameter}` parameter"

    def options_taken(self, options: dict[str, Any]) -> dict[str, Any]:
        """The options the sampler is built with: of the optional parameters, those it
        accepts; every other option (``batch_size`` for batch samplers) as given."""
        return {k: v for k, v in options.items() if k in self.accepted or k not in OPTIONAL_PARAMETERS}

    def build(self, dataset: Any, num_replicas: int | None, rank: int | None, **options: Any) -> Any:
        """Construct one rank's sampler.

        ``None`` for ``num_replicas``/``rank`` is left out, so the sampler takes them from
        the process group as DistributedSampler does. The options are those it takes
        (:meth:`options_taken`); callers only vary the ones it supports.
        """
        kwargs = self.options_taken(options)
        if self.wrapper is not None:
            world = dist.get_world_size() if num_replicas is None else num_replicas
            return self.wrapper.shard(self.factory(dataset, **kwargs), world, dist.get_rank() if rank is None else rank)
        if self.needs_process_group and (num_replicas is not None or rank is not None):
            raise TypeError(
                f"{self.spec} takes its rank from the process group; it cannot be built with explicit "
                f"num_replicas={num_replicas}, rank={rank}"
            )
        if num_replicas is not None:
            kwargs[self.world_size_name] = num_replicas
        if rank is not None:
            kwargs["rank"] = rank
        return self.factory(dataset, **kwargs)


def build_for_cost(plug: Plug, contract: Contract, size: int, world_size: int, rank: int) -> Callable[[], Any]:
    """What the cost probe times (``harness.execution.cost``): building rank ``rank``'s sampler
    of ``size`` items on ``world_size`` ranks, shuffled, at epoch 0, its inputs made beforehand."""
    assert isinstance(plug, SamplerPlug) and isinstance(contract, SamplerContract)
    options = IndexCase(size, world_size).within(contract).sampler_options(contract)
    dataset = IndexDataset(size)
    return at_epoch_zero(lambda: plug.build(dataset, world_size, rank, **options))


def load_plug(spec: str) -> SamplerPlug:
    """Resolve ``spec`` to a :class:`SamplerPlug`, or raise :class:`SpecError`. A spec
    ``INNER sharded with NAME`` (``--shard-with``) names a sampler with no rank of its own,
    built as ``Inner(dataset, shuffle=, seed=, drop_last=, ...)``, and its wrapper."""
    inner, wrapper = split_sharded(spec)
    module_part, attr_part = split_spec(inner, SPEC_HELP)
    module = import_module(inner, module_part, SPEC_HELP)
    factory = resolve_attribute(inner, module, attr_part, CONVENTION)
    # With a wrapper, the wrapper gives the ranks: the inner sampler takes none.
    needs_group = wrapper is None and getattr(factory, GROUP_ATTRIBUTE, False) is True
    world_size_name = _world_size_name(factory)
    return SamplerPlug(
        spec=spec,
        factory=factory,
        source_file=source_file(factory, module),
        accepted=_accepted_parameters(
            spec, factory, world_size_name, ranks_given_elsewhere=needs_group or wrapper is not None
        ),
        needs_process_group=needs_group,
        takes_mesh=names_parameter(factory, MESH_PARAMETER),
        wrapper=wrapper,
        world_size_name=world_size_name,
    )


def _world_size_name(factory: Callable[..., Any]) -> str:
    """``world_size`` where the sampler takes it and no ``num_replicas``, else ``num_replicas``."""
    keywords = keyword_parameters(factory)
    if keywords is not None and WORLD_SIZE_ALIAS in keywords and "num_replicas" not in keywords:
        return WORLD_SIZE_ALIAS
    return "num_replicas"


def _accepted_parameters(
    spec: str, factory: Callable[..., Any], world_size_name: str, ranks_given_elsewhere: bool
) -> frozenset[str]:
    """The optional parameters ``factory`` takes. Raises SpecError where it takes no rank and
    none is given elsewhere (by the process group, or by a wrapper)."""
    keywords = keyword_parameters(factory)
    if keywords is None:
        return frozenset(OPTIONAL_PARAMETERS)
    lacking = [p for p in (world_size_name, "rank") if p not in keywords]
    if lacking and not ranks_given_elsewhere:
        raise SpecError(
            f"--sampler={spec!r}: the sampler does not accept the keyword argument(s) "
            f"{', '.join(lacking)}. The suite calls it as Attr(dataset, num_replicas=W, rank=r, ...) "
            f"like DistributedSampler (or world_size=W, where it takes world_size and no num_replicas); wrap "
            f"it in a factory function that takes those arguments, or, if "
            f"it reads its rank from the process group, set `{GROUP_ATTRIBUTE} = True` on the factory "
            f"(docs/certify-your-sampler.md: samplers that take their rank from elsewhere); if a library's "
            f"wrapper shards it, name the wrapper: --shard-with={' or '.join(WRAPPERS)}."
        )
    return frozenset(p for p in OPTIONAL_PARAMETERS if p in keywords)


def _check_rank_defaults(plug: SamplerPlug) -> None:
    """A SpecError where the sampler requires num_replicas or rank: in real process groups
    every rank builds it as a job builds DistributedSampler(dataset), its rank from the group
    (and `group_defaults` and `defaults` check just that), so every such build would raise, a
    verdict on how it is called rather than on the sampler."""
    if plug.needs_process_group or plug.wrapper is not None:
        return
    required = [name for name in (plug.world_size_name, "rank") if name in required_parameters(plug.factory)]
    if required:
        them, they = ("it", "it is") if len(required) == 1 else ("them", "they are")
        raise SpecError(
            f"--sampler={plug.spec!r}: {' and '.join(required)} {'has' if len(required) == 1 else 'have'} no "
            f"default, but in real process groups the suite builds the sampler as a job builds "
            f"DistributedSampler(dataset), its rank from the group. Give {them} a default of None and take the "
            f"group's (dist.get_world_size(), dist.get_rank()) when {they} None "
            f"(docs/certify-your-sampler.md, 'What a factory must accept')."
        )


def check_fit(plug: Plug, contract: Contract) -> None:
    """A SpecError unless the sampler takes the options ``contract`` builds it with beyond
    DistributedSampler's (``batch_size=`` for batch samplers, ``repeats=``, ``labels=``, ``aspects=``), where
    its signature says which it takes: without them every build would crash, a verdict on the
    choice of contract rather than on the sampler."""
    assert isinstance(plug, SamplerPlug) and isinstance(contract, SamplerContract)
    keywords = keyword_parameters(plug.factory)
    if keywords is None:  # **kwargs, or a signature that cannot be read
        return
    _check_rank_defaults(plug)
    options = IndexCase(LEAST_LABELLED_BATCH, 1).within(contract).sampler_options(contract)
    lacking = [name for name in options if name not in OPTIONAL_PARAMETERS and name not in keywords]
    if lacking:
        raise SpecError(
            f"--sampler={plug.spec!r}: the sampler takes no {' or '.join(f'{name}=' for name in lacking)}, which "
            f"--contract={contract.name} builds it with (docs/contracts.md, 'What the sampler must define'). "
            f"Choose the contract the sampler follows (--list-contracts), or wrap it in a factory that takes "
            f"{' and '.join(f'{name}=' for name in lacking)} and passes {'it' if len(lacking) == 1 else 'them'} on."
        )
