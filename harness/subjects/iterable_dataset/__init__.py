"""The streaming dataset: a factory called in each rank as ``make(dataset_size, *, rank,
world_size, seed, shuffle, num_shards, shards, batch_size, workdir, sources, weights)``,
returning that rank's ``torch.utils.data.IterableDataset``, read through DataLoader workers
the suite owns.

Its plug, its cases and draws, how its items are read (``items``) and its epochs loaded
(``loading``), its scenarios and checks. ``SUBJECT`` is what the rest of the suite knows of
it; this module imports only its contracts, invariants and plug, so that loading the
registry of subjects stays light.
"""

from sampler_conformance.core.subject import Subject

from .contracts import CONTRACTS, EXTENSIONS
from .edges import EDGE_SIZES, SAID
from .invariants import DECLARED
from .plug import DEFAULT_SPEC, build_for_cost, check_fit, load_plug
from .repro import script_for, scripted

SUBJECT = Subject(
    name="iterable_dataset",
    contracts=CONTRACTS,
    extensions=EXTENSIONS,
    invariants=DECLARED,
    crash_flag="stream_runs",
    invalid_item_flag="item_ids",
    load=load_plug,
    check_fit=check_fit,
    cost_probe=build_for_cost,
    default_spec=DEFAULT_SPEC,
    edges=EDGE_SIZES,
    edges_said=SAID,
    fixtures=f"{__name__}.fixtures",
    plug_fixture="stream_plug",
    noun="dataset",
    invalid_items="yielded items without a valid id",
    yields=("item", "items"),
    reproduce=script_for,
    scripted=scripted,
)
