"""The plug: load the streaming dataset under test from a ``MODULE:ATTR`` spec.

The spec names a factory called in each rank process (and, in-process, once per simulated
rank): ``make(dataset_size, *, rank, world_size, seed, shuffle, num_shards, shards, batch_size, workdir,
sources, weights)``
returns that rank's ``torch.utils.data.IterableDataset``. Only ``dataset_size``, ``rank`` and
``world_size`` are required; of the others the factory takes those it names (or all of them,
with ``**kwargs``), and the invariants that need one it lacks are not applicable.

- ``shards``: the layout the suite drew, a tuple of ``range`` objects, one per shard, that
  together hold the ids ``0 .. dataset_size - 1`` once each (some may be empty);
  ``num_shards`` is its length, for a factory that lays the ids out itself.
- ``sources`` and ``weights`` (the contract ``stream_mix`` only, which needs both): a tuple
  of ``range`` objects, consecutive, that together hold the ids once each, and each one's
  weight, a float (some may be 0); every shard lies within one source.
- ``workdir``: a folder the suite owns, the same for every example with the same layout,
  where a factory that needs files writes its shards (once: it may find them there).

The items the dataset yields carry the ids (``item_id``): an int, a 0-d integer tensor, a
mapping holding it under ``"id"``, or a tuple or list holding it first.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import Plug, SpecError
from sampler_conformance.execution.scenario import RankContext

from ..common.cost import at_epoch_zero
from ..specs import (
    GROUP_ATTRIBUTE,
    FactoryConvention,
    FactoryPlug,
    factory_worker_modules,
    import_module,
    keyword_parameters,
    mesh_said,
    resolve_attribute,
    source_file,
    split_spec,
)
from .case import StreamCase, one_shard_per_rank
from .contracts import MIX_PARAMETERS, StreamContract

DEFAULT_SPEC = "sampler_conformance.adapters.torch_iterable:make"
REQUIRED_PARAMETERS = ("rank", "world_size")
# Parameters a factory may lack; the invariants that need one are not applicable.
OPTIONAL_PARAMETERS = ("seed", "shuffle", "num_shards", "shards", "batch_size", "workdir", "sources", "weights")
SPEC_HELP = (
    "Give it as MODULE:ATTR, e.g. --sampler=sampler_conformance.adapters.torch_iterable:make "
    "or --sampler=path/to/my_dataset.py:make"
)
# A factory sets GROUP_ATTRIBUTE (specs) when its dataset reads its rank from the environment
# (RANK, WORLD_SIZE) or the process group, whatever rank it is told, as webdataset's
# split_by_node does: only real process groups can run it.
# What every worker needs of the suite's own: the items' checks, and torchdata's loader for resumes.
SUITE_WORKER_MODULES = ("sampler_conformance.subjects.iterable_dataset.items", "torchdata.stateful_dataloader")
CONVENTION = FactoryConvention(
    call=f"make(dataset_size, *, {', '.join((*REQUIRED_PARAMETERS, *OPTIONAL_PARAMETERS))})",
    required=REQUIRED_PARAMETERS,
    optional=OPTIONAL_PARAMETERS,
    contracts="streaming-dataset contracts",
    returns="the rank's IterableDataset",
    guide="docs/streaming-datasets.md",
)


@dataclass(frozen=True, repr=False)
class StreamPlug(FactoryPlug):
    """The dataset factory under test and the parameters it takes."""

    # The suite's (SUITE_WORKER_MODULES), the factory's module (a dotted name, or the path of its
    # .py file) and those it names (specs.WORKER_MODULES_ATTRIBUTE).
    worker_modules: tuple[str, ...] = ()
    needs_process_group: bool = False  # GROUP_ATTRIBUTE: in-process tests are not applicable
    optional: ClassVar[tuple[str, ...]] = OPTIONAL_PARAMETERS
    called: ClassVar[str] = "dataset factory"

    def build(self, dataset_size: int, rank: int, world_size: int, **options: Any) -> Any:
        """One rank's dataset; of ``options``, those the factory does not take are left out."""
        return self.factory(dataset_size, rank=rank, world_size=world_size, **self.taken(options))


def build_dataset(rank: RankContext, plug: StreamPlug, case: StreamCase, who: int, options: dict[str, Any]) -> Any:
    """Rank ``who``'s dataset for ``case``, built in ``rank``'s process (on a mesh, as :meth:`FactoryPlug.placed` says)."""
    given_rank, size, mesh = plug.placed(rank, who, case.world_size)
    return rank.call(
        f"in make(N={case.dataset_size}, rank={given_rank}, world_size={size}{mesh_said(mesh)}, ...)",
        lambda: plug.build(case.dataset_size, given_rank, size, **options, **mesh),
    )


def build_for_cost(plug: Plug, contract: Contract, size: int, world_size: int, rank: int) -> Callable[[], Any]:
    """What the cost probe times (``harness.execution.cost``): building rank ``rank``'s dataset
    of ``size`` ids in a shard per rank (``one_shard_per_rank``), shuffled, seed 0, batches of
    one, in a workdir of its own, at epoch 0 as a training loop sets it; read as it is, without
    DataLoader workers (their start is the loader's cost)."""
    assert isinstance(plug, StreamPlug) and isinstance(contract, StreamContract)
    case = one_shard_per_rank(size, world_size, mixes=contract.mixes, seed=0)
    options = case.factory_options(tempfile.mkdtemp(prefix="layout-"))  # in the probe's own temp folder
    return at_epoch_zero(lambda: plug.build(size, rank, world_size, **options))


def load_plug(spec: str) -> StreamPlug:
    """Resolve ``spec`` to a :class:`StreamPlug`, or raise :class:`SpecError`."""
    module_part, attr_part = split_spec(spec, SPEC_HELP)
    module = import_module(spec, module_part, SPEC_HELP)
    factory = resolve_attribute(spec, module, attr_part, CONVENTION.described)
    return StreamPlug(
        spec,
        factory,
        source_file(factory, module),
        CONVENTION.accepted(spec, factory),
        (*SUITE_WORKER_MODULES, *factory_worker_modules(spec, module_part, module, factory)),
        getattr(factory, GROUP_ATTRIBUTE, False) is True,
    )


def check_fit(plug: Plug, contract: Contract) -> None:
    """A SpecError unless the factory takes ``sources=`` and ``weights=`` when ``contract``
    mixes sources: without them it cannot build a mix, a verdict on the choice of contract
    rather than on the dataset."""
    assert isinstance(plug, StreamPlug) and isinstance(contract, StreamContract)
    keywords = keyword_parameters(plug.factory)
    if not contract.mixes or keywords is None:  # **kwargs, or a signature that cannot be read
        return
    lacking = [name for name in MIX_PARAMETERS if name not in keywords]
    if lacking:
        raise SpecError(
            f"--sampler={plug.spec!r}: the dataset factory takes no {' or '.join(f'{n}=' for n in lacking)}, which "
            f"--contract={contract.name} builds every dataset with (docs/streaming-datasets.md, 'Mixing sources'). "
            f"Choose the contract the dataset follows (--list-contracts), or write a factory that takes "
            f"sources= and weights= and mixes the sources by them."
        )
