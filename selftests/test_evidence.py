"""A "held" rests on enough judged cases: an invariant's tests must judge at least the
profile's floor of cases together (``profiles.judged_floor``), the draws go on past the
cases where the sampler crashes, and an invariant short of the floor is "not judged" with
its count, never "held"."""

from __future__ import annotations

from .suite_run import CONFORMANCE, PROPERTIES, certify

CRASHES_ON_SMALL = "selftests.corpus.evidence:CrashesOnSmallDatasets"


def test_a_sampler_crashing_on_small_sizes_is_judged_above_them(pytester):
    """Crashes below 200 items, where most draws fall, and above them has a bug only real
    groups see (shuffle off by default): the group test draws on until it sees it."""
    run = certify(pytester, CRASHES_ON_SMALL, paths=(PROPERTIES, CONFORMANCE))
    assert run.failed_invariants == {"edge_sizes", "defaults"}, run.explain()
    floor = run.written["run"]["judged_floor"]
    held = {i["flag"]: i["judged"] for i in run.written["invariants"] if i["status"] == "held"}
    assert held and all(judged >= floor for judged in held.values()), (floor, held)
    assert f"({held['agrees_across_ranks']} cases)" in run.summary, run.summary


def test_an_invariant_judged_on_fewer_cases_than_the_floor_is_not_judged(pytester):
    """One world size of three selected: the group-only `defaults` test judges a third of
    its cases, too few to call it held."""
    run = certify(pytester, "torch.utils.data:DistributedSampler", "-k", "W1 and defaults", paths=(CONFORMANCE,))
    defaults = next(i for i in run.written["invariants"] if i["flag"] == "defaults")
    floor = run.written["run"]["judged_floor"]
    assert defaults["status"] == "not judged" and 0 < defaults["judged"] < floor, defaults
    assert f"judged on {defaults['judged']} cases in all, fewer than the floor of {floor}" in defaults["details"][0]
    # Nothing else ran, and nothing reached the floor: no verdict, and no success exit.
    assert run.verdict.startswith("NO VERDICT") and "1 not judged" in run.verdict and run.exit_code == 5, run.verdict
