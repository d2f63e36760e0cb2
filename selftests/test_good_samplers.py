"""Conforming samplers are certified: every invariant holds, none is skipped for them.

In-process alone (``properties/``) the verdict is PARTIAL, with exactly the invariants
that only real process groups check left unchecked; only the whole suite says "conforms".
"""

from __future__ import annotations

import pytest

from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT, GROUP_ONLY
from sampler_conformance.subjects.index_sampler.draws import MAX_DATASET_SIZE

from .catalogue import GOOD
from .suite_run import REPO, certify

# The plug also loads a sampler from a file path (the module is not importable by name).
BY_FILE = f"{REPO / 'selftests' / 'corpus' / 'reference.py'}:NumpyDistributedSampler"
PROMISED = CONTRACTS[DEFAULT_CONTRACT].flags


@pytest.mark.parametrize(
    "spec", [*GOOD, BY_FILE], ids=lambda spec: spec.rpartition(":")[2] + (" by file" if spec == BY_FILE else "")
)
def test_good_sampler_holds_every_in_process_invariant(pytester, spec):
    run = certify(pytester, spec)
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert not run.failed_tests, run.explain()
    statuses = run.statuses
    assert {f for f in PROMISED if statuses[f] == "held"} == PROMISED - GROUP_ONLY, statuses
    assert {f for f in PROMISED if statuses[f] == "not run"} == PROMISED & GROUP_ONLY, statuses
    # Not run is not conforming: the line says PARTIAL and names what was left out.
    assert run.written["verdict"]["state"] == "partial", run.verdict
    assert run.verdict.startswith("PARTIAL: ") and "conforms" not in run.verdict, run.verdict
    assert all(flag in run.verdict for flag in PROMISED & GROUP_ONLY), run.verdict
    # A good sampler takes every parameter: nothing may be skipped for lack of one.
    lacking = {reason for reason in run.skip_reasons if "sampler has no" in reason}
    assert not lacking, lacking


def test_good_sampler_conforms_through_the_whole_suite(pytester):
    spec = "selftests.corpus.parts:PartsSampler"
    run = certify(pytester, spec, "--world-sizes=1,2", ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert set(run.statuses[f] for f in PROMISED) == {"held"}, run.statuses
    assert run.written["verdict"]["state"] == "conforms"
    assert run.verdict.startswith(f"VERDICT: {spec} conforms to contract 'torch'"), run.verdict
    # The sizes the verdict rests on: the largest judged, where; in groups, the largest --world-sizes.
    sizes = run.written["sizes_judged"]
    assert sizes["in_groups"]["world_size"] == 2 and sizes["simulated"]["world_size"] > 2, sizes
    assert 0 < sizes["simulated"]["dataset_size"] <= MAX_DATASET_SIZE, sizes
    assert f"real process groups up to N={sizes['in_groups']['dataset_size']:,}, W=2," in run.summary, run.summary


WORLD_SIZE_NAMED = '''
from torch.utils.data import DistributedSampler


class WorldSizeNamed(DistributedSampler):
    """DistributedSampler, its number of ranks named world_size, as many samplers name it."""

    def __init__(self, dataset, world_size=None, rank=None, shuffle=True, seed=0, drop_last=False):
        super().__init__(dataset, world_size, rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
'''


def test_a_sampler_that_names_its_ranks_world_size_is_called_by_that_name(pytester):
    """Called as Attr(dataset, world_size=W, rank=r, ...), where it was a usage error ("does not
    accept the keyword argument(s) num_replicas")."""
    (pytester.path / "world_size_named.py").write_text(WORLD_SIZE_NAMED)
    spec = f"{pytester.path / 'world_size_named.py'}:WorldSizeNamed"
    run = certify(pytester, spec, "-k", "per_epoch and (strided or equal_length)")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert run.statuses["strided"] == run.statuses["equal_length"] == "held", run.statuses
