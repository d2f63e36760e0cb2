"""The elastic extension: the conforming elastic sampler holds every invariant of
``torch+elastic`` through the whole suite, each known-bad one fails exactly its invariants,
and ``elastic`` composes only where a global cursor is defined."""

from __future__ import annotations

import pytest

from sampler_conformance.subjects import GROUP_ONLY, REGISTRY, contract_named
from sampler_conformance.subjects.index_sampler.contracts import ELASTIC, RESUMABLE, TORCH
from sampler_conformance.subjects.index_sampler.repro_groups import READ_IN_GROUPS

from .catalogue import ELASTIC_BAD, ELASTIC_CONTRACT, ELASTIC_WORLD_SIZES, MEGATRON_RANDOM
from .reproduced import assert_reproduced
from .suite_run import PROPERTIES, certify, certify_rejected

OPTIONS = (f"--contract={ELASTIC_CONTRACT}", f"--world-sizes={ELASTIC_WORLD_SIZES}")
GOOD_ELASTIC = "selftests.corpus.elastic:ElasticSampler"
GOOD_ELASTIC_BATCHES = "selftests.corpus.elastic:ElasticBatchShard"


def test_a_conforming_elastic_sampler_holds_every_invariant_in_the_whole_suite(pytester):
    run = certify(pytester, GOOD_ELASTIC, *OPTIONS, ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(ELASTIC_CONTRACT).flags, run.explain()
    assert run.verdict.startswith(f"VERDICT: {GOOD_ELASTIC} conforms"), run.verdict


@pytest.mark.parametrize("spec", list(ELASTIC_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_elastic_bug_fails_exactly_its_invariants_in_the_whole_suite(pytester, spec):
    run = certify_rejected(pytester, spec, ELASTIC_BAD[spec], *OPTIONS, "--repro=on", ranks="all")
    assert_reproduced(run, GOOD_ELASTIC, read_in_groups=READ_IN_GROUPS)


def test_a_conforming_elastic_batch_shard_holds_every_invariant_judged_in_one_process(pytester):
    """The reference the batch scripts below must hold on: every invariant of batch+elastic that
    simulated ranks judge holds (properties/; the scripts it backs read in one process)."""
    run = certify(pytester, GOOD_ELASTIC_BATCHES, "--contract=batch+elastic", paths=(PROPERTIES,))
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named("batch+elastic").flags - GROUP_ONLY, run.explain()


def test_a_batch_sampler_s_elastic_failures_are_reproduced_reading_its_batches(pytester):
    """Each elastic invariant a sampler that yields batches fails gets a script that reads each
    rank's batches, the global order interleaving whole batches: it fails on Megatron's
    sampler, and holds on the conforming ElasticBatchShard."""
    run = certify(
        pytester,
        MEGATRON_RANDOM,
        "--contract=batch+elastic",
        "--repro=on",
        paths=(PROPERTIES / "test_elastic.py",),
        profile="dev",  # the selftest profile draws too few cases the sampler does not raise on
    )
    assert {"elastic_cursor", "elastic_exactly_once", "elastic_hops_compose"} <= run.failed_invariants, run.explain()
    assert_reproduced(run, GOOD_ELASTIC_BATCHES)


def test_a_resumable_sampler_refusing_other_world_sizes_crashes_once_and_no_elastic_invariant_is_judged(pytester):
    """The conforming resumable sampler refuses a state from another world size, as
    ``resumable`` requires: under ``elastic`` that refusal is a crash of every elastic test."""
    run = certify(pytester, "selftests.corpus.resumable:ResumableSampler", f"--contract={ELASTIC_CONTRACT}")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    elastic_only = ELASTIC.flags - RESUMABLE.flags
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert {run.statuses[flag] for flag in elastic_only} == {"not judged"}, run.statuses
    assert "this state was saved by a sampler with num_replicas=" in run.output, run.explain()


def test_elastic_is_resumable_on_any_world_size():
    composed = contract_named(ELASTIC_CONTRACT)
    # Every resume promise but the one refusal that elastic withdraws.
    assert RESUMABLE.flags - ELASTIC.flags == ELASTIC.withdraws == {"other_world_size_refused"}
    assert composed.flags == (TORCH.flags | ELASTIC.flags) - ELASTIC.withdraws
    assert contract_named("torch+resumable+elastic").flags == composed.flags
    assert ELASTIC.flags <= set(REGISTRY)
    assert ELASTIC.flags - RESUMABLE.flags <= {rejection.flag for rejection in ELASTIC_BAD.values()}


@pytest.mark.parametrize("base", ["contiguous", "partition"])
def test_elastic_needs_ranks_that_take_turns_through_one_order(pytester, base):
    result = pytester.runpytest_subprocess("-p", "sampler_conformance.plugin", f"--contract={base}+elastic")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "'elastic' composes only with contracts promising strided or whole_batches: a global cursor needs"
        in "\n".join(result.errlines)
    )
