"""The plug: load the data loader under test from a ``MODULE:ATTR`` spec.

The spec names a factory (or a class) called once per rank: ``make(dataset_size, *, dp_rank,
dp_world_size, global_batch_size, seed, num_workers, workdir)``, of which it takes the last
three where it names them. ``seed`` is optional: the invariants that need it are not
applicable to a factory without one; ``num_workers`` (drawn 0 to 2) is the loader workers it
starts, which start from the rank's fork server (its module imported there, and those it names
in a ``worker_modules`` attribute, so that they unpickle what it sends them); ``workdir`` is a fresh empty directory of the rank's own, for a
loader that writes its index files.

It returns that rank's loader: an iterable of batches, each carrying the ids of its instances
(ints in ``range(dataset_size)``; :func:`batch_ids` says which shapes are read), with an epoch
hook, ``reshuffle(epoch)`` (olmo-core's name) or ``set_epoch(epoch)`` (torch's), called before
each epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from sampler_conformance.subjects.common.reading import BadIndex, batch_array

from ..specs import (
    FactoryConvention,
    FactoryPlug,
    factory_worker_modules,
    import_module,
    resolve_attribute,
    source_file,
    split_spec,
)

DEFAULT_SPEC = "sampler_conformance.adapters.torch_loader:make"
NOUN = "data loader"  # what is tested, in a fault's words
REQUIRED_PARAMETERS = ("dp_rank", "dp_world_size", "global_batch_size")
OPTIONAL_PARAMETERS = ("seed", "num_workers", "workdir")
# The keys of a batch that is a mapping, in the order they are looked for: olmo-core's
# instance batches carry "index", others "ids".
ID_KEYS = ("index", "ids")
# The epoch hooks, in the order they are looked for.
EPOCH_HOOKS = ("reshuffle", "set_epoch")
SPEC_HELP = (
    "Give it as MODULE:ATTR, e.g. --sampler=sampler_conformance.adapters.torch_loader:make "
    "or --sampler=path/to/my_loader.py:make"
)
CONVENTION = FactoryConvention(
    call="make(dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed, num_workers, workdir)",
    required=REQUIRED_PARAMETERS,
    optional=OPTIONAL_PARAMETERS,
    contracts="data loader contracts",
    returns="the rank's data loader",
    guide="harness/subjects/data_loader/plug.py",
)


@dataclass(frozen=True, repr=False)
class LoaderPlug(FactoryPlug):
    """The data loader factory under test and the optional parameters it takes."""

    worker_modules: tuple[str, ...] = ()  # the factory's module and those it names (specs.factory_worker_modules)
    needs_process_group: bool = False
    optional: ClassVar[tuple[str, ...]] = OPTIONAL_PARAMETERS
    called: ClassVar[str] = "data loader factory"

    def build(self, dataset_size: int, rank: int, world_size: int, global_batch_size: int, **options: Any) -> Any:
        """One rank's loader; of ``options``, those the factory does not take are left out."""
        return self.factory(
            dataset_size,
            dp_rank=rank,
            dp_world_size=world_size,
            global_batch_size=global_batch_size,
            **self.taken(options),
        )


def epoch_hook(loader: Any) -> str | None:
    """The name of the loader's epoch hook, or None where it has neither."""
    return next((name for name in EPOCH_HOOKS if callable(getattr(loader, name, None))), None)


def batch_ids(batch: Any, position: int) -> Any:
    """The instance ids a batch carries, as an int64 array: the batch itself where it is a
    list, tuple or 1-D integer tensor or array of ids, else its ``"index"`` or ``"ids"`` entry
    where it is a mapping. :class:`BadIndex` for anything else."""
    if isinstance(batch, Mapping):
        key = next((key for key in ID_KEYS if key in batch), None)
        if key is None:
            raise BadIndex(
                f"yielded batch {position} as a mapping with keys {sorted(map(str, batch))[:8]}, none of "
                f"{', '.join(map(repr, ID_KEYS))}: the suite reads the instance ids there"
            )
        batch = batch[key]
    return batch_array(batch, position)


def load_plug(spec: str) -> LoaderPlug:
    """Resolve ``spec`` to a :class:`LoaderPlug`, or raise ``SpecError``."""
    module_part, attr_part = split_spec(spec, SPEC_HELP)
    module = import_module(spec, module_part, SPEC_HELP)
    factory = resolve_attribute(spec, module, attr_part, CONVENTION.described)
    accepted = CONVENTION.accepted(spec, factory)
    workers_need = factory_worker_modules(spec, module_part, module, factory)
    return LoaderPlug(spec, factory, source_file(factory, module), accepted, worker_modules=workers_need)
