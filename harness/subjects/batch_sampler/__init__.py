"""The batch sampler: a factory called in each rank as ``make(lengths, *, num_replicas, rank,
max_tokens or sample_rate, seed)``, returning that rank's batch sampler, which forms its own
batches: within a token budget from the items' lengths (length-bucketed, dynamic batches), or
by drawing each item of its shard at each step (Poisson subsampling).

Its plug, cases and draws, its scenario and checks; the statistical test of the Poisson rate is
``harness.core.frequencies``. ``SUBJECT`` is what the rest of the suite knows of it; this
module imports only its contracts, invariants and plug, so that loading the registry of
subjects stays light.
"""

from sampler_conformance.core.subject import Subject

from .contracts import CONTRACTS
from .edges import EDGE_SIZES, SAID
from .invariants import DECLARED
from .plug import DEFAULT_SPEC, build_for_cost, check_fit, load_plug
from .repro import script_for, scripted

SUBJECT = Subject(
    name="batch_sampler",
    contracts=CONTRACTS,
    extensions={},
    invariants=DECLARED,
    crash_flag="batches_run",
    invalid_item_flag="batch_items",
    load=load_plug,
    default_spec=DEFAULT_SPEC,
    fixtures=f"{__name__}.fixtures",
    plug_fixture="batch_plug",
    invalid_items="yielded batches that are not lists of int indices",
    check_fit=check_fit,
    cost_probe=build_for_cost,
    cost_noun="batch",
    edges=EDGE_SIZES,
    edges_said=SAID,
    reproduce=script_for,
    scripted=scripted,
)
