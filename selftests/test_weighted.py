"""The weighted sampler subject: its reference conforms, and each known-bad sampler of
selftests/corpus/weighted_bad.py fails exactly the invariants its bug breaks."""

from __future__ import annotations

import pytest

from sampler_conformance.adapters import lightning, monai, torchdata
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.weighted_sampler import SUBJECT
from sampler_conformance.subjects.weighted_sampler.case import WeightedCase
from sampler_conformance.subjects.weighted_sampler.checks import check_draw_counts
from sampler_conformance.subjects.weighted_sampler.contracts import WEIGHTED
from sampler_conformance.subjects.weighted_sampler.plug import load_plug
from sampler_conformance.subjects.weighted_sampler.scenarios import read_epochs

from .catalogue import (
    WEIGHTED_BAD,
    WEIGHTED_BAD_MODULE,
    WEIGHTED_CONTRACT,
    WEIGHTED_PARTITION_BAD,
    WEIGHTED_PARTITION_CONTRACT,
    WITHOUT_REPLACEMENT_BAD,
    WITHOUT_REPLACEMENT_CONTRACT,
)
from .reproduced import assert_reproduced
from .suite_run import SELFTEST_EXAMPLES, certify, certify_rejected
from .test_adapters import assert_missing_package_is_named

CONTRACT_OPTION = f"--contract={WEIGHTED_CONTRACT}"
# One world size in groups: the per-process tests judge the same at W=2 as at more.
GROUP_OPTION = "--world-sizes=2"


@pytest.mark.parametrize("contract", [WEIGHTED_CONTRACT, WEIGHTED_PARTITION_CONTRACT, WITHOUT_REPLACEMENT_CONTRACT])
def test_each_contracts_reference_holds_every_invariant(pytester, contract):
    """Certified with no spec: the contract's reference is what runs."""
    run = certify(pytester, "", f"--contract={contract}", GROUP_OPTION, ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(contract).flags, run.explain()
    assert run.verdict.startswith(f"VERDICT: {contract_named(contract).reference} conforms"), run.verdict
    # The certificate records the statistical invariant's frequency tests, held within the budget.
    (recorded,) = [i["statistics"] for i in run.written["invariants"] if i["statistics"] is not None]
    assert recorded["tests_run"] >= SELFTEST_EXAMPLES and recorded["false_alarm_budget"] == 1e-6, recorded
    assert recorded["closest"]["p_value_bound"] > recorded["closest"]["threshold"], recorded


@pytest.mark.parametrize("spec", list(WEIGHTED_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_weighted_bug_fails_exactly_its_invariants(pytester, spec):
    run = certify_rejected(pytester, spec, WEIGHTED_BAD[spec], CONTRACT_OPTION, GROUP_OPTION, "--repro=on", ranks="all")
    assert_reproduced(run, SUBJECT.default_spec, flaky=WEIGHTED_FLAKY.get(spec, ()))


# The weighted known-bads whose scripts no two runs print alike, by the flags they fail so: the run says why.
WEIGHTED_FLAKY = {
    f"{WEIGHTED_BAD_MODULE}:{name}": ("weighted_deterministic",)
    for name in ("GlobalGenerator", "GlobalGeneratorWithoutSetEpoch", "UnshardedGlobalStream")
}


@pytest.mark.parametrize("spec", list(WEIGHTED_PARTITION_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_partition_bug_fails_exactly_its_invariants(pytester, spec):
    _certified_and_reproduced(
        pytester, spec, WEIGHTED_PARTITION_BAD[spec], WEIGHTED_PARTITION_CONTRACT, GROUP_OPTION, ranks="all"
    )


@pytest.mark.parametrize("spec", list(WITHOUT_REPLACEMENT_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_without_replacement_bug_fails_exactly_its_invariants(pytester, spec):
    """In-process: neither bug needs a process of its own to show (each rank's generator is its own)."""
    _certified_and_reproduced(pytester, spec, WITHOUT_REPLACEMENT_BAD[spec], WITHOUT_REPLACEMENT_CONTRACT)


def _certified_and_reproduced(pytester, spec, rejection, contract, *options, ranks="simulated"):
    """The exact verdict, and each failed invariant's script (docs/reproductions.md) that the
    contract covers: exit 1 with the violation's words, and 0 against the contract's reference."""
    run = certify_rejected(pytester, spec, rejection, f"--contract={contract}", *options, "--repro=on", ranks=ranks)
    assert_reproduced(run, contract_named(contract).reference)


def test_a_sampler_that_advances_its_own_epoch_conforms(pytester):
    """torchdata's MultiNodeWeightedSampler (a test dependency) has no set_epoch and reseeds
    each pass from its count: its passes differ, and pass k is the same for the same
    arguments. Compared with a fresh sampler's first pass, its second would fail
    weighted_deterministic whatever it did (``core.comparing.fresh_epochs``)."""
    spec = f"{torchdata.__name__}:MultiNodeWeightedSampler"
    run = certify(pytester, spec, CONTRACT_OPTION, GROUP_OPTION, ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert run.verdict.startswith(f"VERDICT: {spec} conforms"), run.verdict


@pytest.mark.parametrize(
    ("factory", "packages", "distribution"),
    [
        (lightning.WeightedDistributedSamplerWrapper, ("lightning_fabric", "pytorch_lightning"), "pytorch-lightning"),
        (monai.DistributedWeightedRandomSampler, ("monai",), "monai"),
    ],
)
def test_a_missing_library_is_named_with_what_to_install(monkeypatch, factory, packages, distribution):
    assert_missing_package_is_named(
        monkeypatch,
        factory,
        packages,
        distribution,
        load_plug,
        lambda: factory([1.0, 2.0], num_replicas=2, rank=0, num_samples=4, seed=0),
    )


def test_too_many_draws_that_stop_are_counted_not_called_endless():
    """A sampler that ignores num_samples and draws ceil(N/W), far more than num_samples, but
    stops: its draws are read whole and charged to draw_counts, not cut off at a read limit
    and called endless (which charged drawn_indices)."""
    spec = f"{WEIGHTED_BAD_MODULE}:IgnoresNumSamples"
    case = WeightedCase(dataset_size=300, world_size=1, weights=(1.0,) * 300, num_samples=1)
    (epoch,) = read_epochs(SIMULATED, load_plug(spec), WEIGHTED, case)
    assert [drawn.size for drawn in epoch.observation.indices] == [300]
    (violation,) = check_draw_counts(epoch)
    assert violation.flag == "draw_counts" and "drew 300 indices where num_samples=1" in violation.message
