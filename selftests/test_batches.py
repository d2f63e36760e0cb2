"""The batch sampler subject: its references conform, and each known-bad sampler of
selftests/corpus/batch_bad.py fails exactly the invariants its bug breaks."""

from __future__ import annotations

import functools
import json

import jsonschema
import numpy as np
import pytest

from sampler_conformance.adapters import budget_batches, lhotse, opacus, speechbrain, torch_geometric
from sampler_conformance.core.case import Observation
from sampler_conformance.core.subject import SpecError
from sampler_conformance.report.certificate import SCHEMA_PATH
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.batch_sampler.case import BatchCase
from sampler_conformance.subjects.batch_sampler.checks import check_equal_counts
from sampler_conformance.subjects.batch_sampler.plug import check_fit, load_plug
from sampler_conformance.subjects.batch_sampler.runs import PlannedEpoch

from .catalogue import (
    DYNAMIC_BATCHES_BAD,
    DYNAMIC_BATCHES_CONTRACT,
    MICRO_BATCHES_BAD,
    MICRO_BATCHES_CONTRACT,
    POISSON_BAD,
    POISSON_CONTRACT,
)
from .reproduced import assert_reproduced
from .suite_run import SELFTEST_EXAMPLES, certify, certify_rejected
from .test_adapters import assert_missing_package_is_named

# One world size in groups: the lock-step and agreement tests judge the same at W=2 as at more.
GROUP_OPTION = "--world-sizes=2"


@pytest.mark.parametrize("contract", [DYNAMIC_BATCHES_CONTRACT, MICRO_BATCHES_CONTRACT, POISSON_CONTRACT])
def test_each_contracts_reference_holds_every_invariant(pytester, contract):
    """Certified with no spec: the contract's reference is what runs, in-process and in real groups."""
    run = certify(pytester, "", f"--contract={contract}", GROUP_OPTION, ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(contract).flags, run.explain()
    assert run.verdict.startswith(f"VERDICT: {contract_named(contract).reference} conforms"), run.verdict
    recorded = [i["statistics"] for i in run.written["invariants"] if i["statistics"] is not None]
    if contract == POISSON_CONTRACT:  # the rate test's record, held within the budget
        (rate,) = recorded
        assert rate["tests_run"] >= SELFTEST_EXAMPLES and rate["false_alarm_budget"] == 1e-6, rate
        assert rate["closest"]["p_value_bound"] > rate["closest"]["threshold"], rate
    else:
        assert recorded == [], recorded
    if contract == DYNAMIC_BATCHES_CONTRACT:  # the padding its batches waste, measured without a verdict
        (measured,) = [i["measurements"] for i in run.written["invariants"] if i["measurements"] is not None]
        padding = measured["padding wasted per batch"]
        assert padding["values"] > 0 and 0 <= padding["mean"] <= padding["max"] <= 1, measured
    jsonschema.validate(run.written, json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.parametrize("spec", list(DYNAMIC_BATCHES_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_dynamic_batch_bug_fails_exactly_its_invariants(pytester, spec):
    rejection = DYNAMIC_BATCHES_BAD[spec]
    # A bug of the numeric edge is proven on simulated ranks, where the edge is read: its
    # arithmetic is the same in every process, and the groups' cases are those at N <= 200.
    ranks = "simulated" if "--scale" in rejection.options else "all"
    _certified_and_reproduced(pytester, spec, rejection, DYNAMIC_BATCHES_CONTRACT, ranks)


@pytest.mark.parametrize("spec", list(MICRO_BATCHES_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_micro_batch_bug_fails_exactly_its_invariants(pytester, spec):
    _certified_and_reproduced(pytester, spec, MICRO_BATCHES_BAD[spec], MICRO_BATCHES_CONTRACT)


@pytest.mark.parametrize("spec", list(POISSON_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_poisson_bug_fails_exactly_its_invariants(pytester, spec):
    _certified_and_reproduced(pytester, spec, POISSON_BAD[spec], POISSON_CONTRACT)


def _certified_and_reproduced(pytester, spec, rejection, contract, ranks="all"):
    """The exact verdict, and each failed invariant's script (docs/reproductions.md): exit 1
    with the violation's words, and 0 against the contract's reference."""
    run = certify_rejected(pytester, spec, rejection, f"--contract={contract}", GROUP_OPTION, "--repro=on", ranks=ranks)
    assert_reproduced(run, contract_named(contract).reference, flaky=FLAKY.get(spec, ()))


# The batch known-bads whose scripts no two runs print alike, by the flags they fail so: the run says why.
FLAKY = {"selftests.corpus.batch_bad:PlanCachedPerProcess": ("batches_deterministic",)}


def test_unequal_batch_counts_name_the_ranks_that_had_the_step_the_others_never_join():
    """opacus's Poisson sampler at N=1, W=2: rank 0 draws its item, rank 1 nothing."""
    case = BatchCase(dataset_size=1, world_size=2, lengths=(1,), sample_rate=0.01, epoch=1)
    item = np.array([0])
    observation = Observation(case, (item, item[:0]), (1, 0), batches=((item,), ()))
    (violation,) = check_equal_counts(PlannedEpoch(observation, has_set_epoch=True))
    assert violation.message == (
        "rank(s) 1 ran out after 0 batches, while rank(s) 0 had a batch 0 (batches per rank: [1, 0]): under DDP "
        "the ranks that have one wait forever in the gradient all-reduce of step 0"
    )


def test_a_factory_without_the_contracts_parameter_is_refused_before_any_test():
    """A budget sampler certified as Poisson (it takes no sample_rate) is a usage error naming
    what is missing, not a run of failures."""
    plug = load_plug("sampler_conformance.adapters.budget_batches:make")
    with pytest.raises(SpecError, match="takes no 'sample_rate'"):
        check_fit(plug, contract_named(POISSON_CONTRACT))
    check_fit(plug, contract_named(DYNAMIC_BATCHES_CONTRACT))


def test_a_cost_that_is_neither_sum_nor_padded_is_refused(tmp_path):
    module = tmp_path / "odd_cost.py"
    module.write_text(
        "from sampler_conformance.adapters.budget_batches import make as _make\n"
        "def make(lengths, *, num_replicas, rank, max_tokens, seed=0):\n"
        "    return _make(lengths, num_replicas, rank, max_tokens, seed)\n"
        "make.batch_cost = 'tokens'\n"
    )
    with pytest.raises(SpecError, match="declare one of 'sum', 'padded'"):
        load_plug(f"{module}:make")


@pytest.mark.parametrize(
    ("factory", "options"),
    [
        (lhotse.DynamicBucketingSampler, {"max_tokens": 4}),
        (lhotse.SimpleCutSampler, {"max_tokens": 4}),
        (opacus.DistributedUniformWithReplacementSampler, {"sample_rate": 0.5}),
        (speechbrain.DynamicBatchSampler, {"max_tokens": 4}),
        (torch_geometric.DynamicBatchSampler, {"max_tokens": 4}),
    ],
)
def test_a_missing_library_is_named_with_what_to_install(monkeypatch, factory, options):
    ((_, distribution),) = factory.needs_package
    assert_missing_package_is_named(
        monkeypatch,
        factory,
        (distribution,),
        distribution,
        load_plug,
        lambda: factory([1, 2], num_replicas=2, rank=0, seed=0, **options),
    )


@functools.wraps(budget_batches.micro_batches)
def micro_batches_in_groups_only(*args, **kwargs):
    """The micro_batches reference, declared to act as in a job only inside a process group."""
    return budget_batches.micro_batches(*args, **kwargs)


micro_batches_in_groups_only.needs_process_group = True  # type: ignore[attr-defined]


def test_a_batch_sampler_that_needs_its_group_is_judged_in_real_groups_only(pytester):
    """``needs_process_group = True`` on a batch sampler factory, as on the other subjects':
    the in-process variants are not applicable, and every invariant is judged in groups, those
    checked on simulated ranks for any other sampler too (batches_run, batch_len_matches,
    batches_deterministic, batches_reshuffle: not applicable anywhere, before)."""
    spec = f"{__name__}:micro_batches_in_groups_only"
    run = certify(pytester, spec, f"--contract={MICRO_BATCHES_CONTRACT}", GROUP_OPTION, ranks="all")
    assert run.exit_code == 0 and run.verdict.startswith(f"VERDICT: {spec} conforms"), run.explain()
    assert set(run.statuses.values()) <= {"held", "not promised"}, run.statuses
    assert "declared needs_process_group" in run.summary and "sizes judged" in run.summary
    assert "real process groups up to" in run.summary and "simulated ranks up to" not in run.summary, run.summary
