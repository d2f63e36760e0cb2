"""The weighted sampler: a factory called in each rank as ``make(weights, *, num_replicas,
rank, num_samples, seed)``, returning that rank's sampler, which draws ``num_samples``
indices per epoch with replacement, item ``i`` in proportion to ``weights[i]``.

Its plug, cases and draws, its scenario and checks; the statistical test it shares with any
subject that promises a distribution is ``harness.core.frequencies``. ``SUBJECT`` is what
the rest of the suite knows of it; this module imports only its contracts, invariants and
plug, so that loading the registry of subjects stays light.
"""

from sampler_conformance.core.subject import Subject

from .contracts import CONTRACTS
from .edges import EDGE_SIZES, SAID
from .invariants import DECLARED
from .plug import DEFAULT_SPEC, build_for_cost, load_plug
from .repro import covered, covered_at_the_edge, script_for

SUBJECT = Subject(
    name="weighted_sampler",
    contracts=CONTRACTS,
    extensions={},
    invariants=DECLARED,
    crash_flag="weighted_runs",
    invalid_item_flag="drawn_indices",
    load=load_plug,
    default_spec=DEFAULT_SPEC,
    fixtures=f"{__name__}.fixtures",
    plug_fixture="weighted_plug",
    invalid_items="yielded draws that are not int indices",
    cost_probe=build_for_cost,
    edges=EDGE_SIZES,
    edges_said=SAID,
    reproduce=script_for,
    scripted=covered,
    scripted_at_the_edge=covered_at_the_edge,
)
