"""The data loader: a factory called in each rank as ``make(dataset_size, *, dp_rank,
dp_world_size, global_batch_size, seed, num_workers, workdir)``, returning that rank's loader,
which owns the sampling and the batching: each rank reads its part of every global batch
(olmo-core's ``DataLoaderBase`` family, torchtitan's ``ParallelAwareDataloader``, Megatron's
pretraining loader).

Its plug, cases and draws, its scenario and checks. ``SUBJECT`` is what the rest of the suite
knows of it; this module imports only its contracts, invariants and plug, so that loading the
registry of subjects stays light.
"""

from sampler_conformance.core.subject import Subject

from .contracts import CONTRACTS, EXTENSIONS
from .invariants import DECLARED
from .plug import DEFAULT_SPEC, NOUN, load_plug
from .repro import script_for, scripted

SUBJECT = Subject(
    name="data_loader",
    contracts=CONTRACTS,
    extensions=EXTENSIONS,
    invariants=DECLARED,
    crash_flag="loader_runs",
    invalid_item_flag="loader_batch_ids",
    load=load_plug,
    default_spec=DEFAULT_SPEC,
    fixtures=f"{__name__}.fixtures",
    plug_fixture="loader_plug",
    noun=NOUN,
    invalid_items="yielded batches that carry no instance ids",
    yields=("batch", "batches"),
    reproduce=script_for,
    scripted=scripted,
)
