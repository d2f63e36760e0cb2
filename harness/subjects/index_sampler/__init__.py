"""The index sampler: a class or factory called like ``DistributedSampler(dataset,
num_replicas=W, rank=r, shuffle=..., seed=..., drop_last=...)``.

Its plug, its draws, how it is read, its checks and its scenarios, with the resumable and
elastic extensions (``resume_draws``, ``resume_checks``, ``elastic_checks``). ``SUBJECT`` is
what the rest of the suite knows of it; this module imports only its contracts,
invariants and plug, so that loading the registry of subjects stays light.
"""

from sampler_conformance.core.subject import Subject

from .case import MAX_DATASET_SIZE, MAX_WORLD_SIZE
from .contracts import CONTRACTS, EXTENSIONS
from .edges import EDGE_SIZES, SAID
from .invariants import DECLARED
from .plug import DEFAULT_SPEC, build_for_cost, check_fit, load_plug
from .repro import script_for, scripted, scripted_at_the_edge
from .seed_range import probe_once
from .wrappers import WRAPPERS

SUBJECT = Subject(
    name="index_sampler",
    contracts=CONTRACTS,
    extensions=EXTENSIONS,
    invariants=DECLARED,
    crash_flag="edge_sizes",
    invalid_item_flag="valid_indices",
    load=load_plug,
    check_fit=check_fit,
    default_spec=DEFAULT_SPEC,
    fixtures=f"{__name__}.fixtures",
    plug_fixture="sampler_plug",
    probe=probe_once,
    cost_probe=build_for_cost,
    edges=EDGE_SIZES,
    edges_said=SAID,
    drawn=(MAX_DATASET_SIZE, MAX_WORLD_SIZE),
    wrappers=WRAPPERS,
    reproduce=script_for,
    scripted=scripted,
    scripted_at_the_edge=scripted_at_the_edge,
)
