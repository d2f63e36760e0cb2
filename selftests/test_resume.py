"""The resumable extension end to end: ``--contract=torch+resumable`` certifies a conforming
resumable sampler, rejects each resume bug of the corpus through exactly the invariants the
catalogue says, and charges a sampler without state_dict() every resumable invariant."""

from __future__ import annotations

import pytest

from sampler_conformance.subjects import GROUP_ONLY, REGISTRY, contract_named
from sampler_conformance.subjects.index_sampler.contracts import RESUMABLE, TORCH, SamplerContract
from sampler_conformance.subjects.index_sampler.repro_groups import READ_IN_GROUPS
from sampler_conformance.subjects.index_sampler.resume_checks import LEN_COUNTS_THE_EPOCH

from .catalogue import GROUP_WORLD_SIZES, MEGATRON_RANDOM, RESUMABLE_CONTRACT, RESUME_BAD, RESUME_GROUP_BAD
from .reproduced import assert_reproduced
from .suite_run import CONFORMANCE, PROPERTIES, certify, certify_rejected

CONTRACT_OPTION = f"--contract={RESUMABLE_CONTRACT}"
GOOD_RESUMABLE = "selftests.corpus.resumable:ResumableSampler"


def test_a_conforming_resumable_sampler_holds_every_invariant_in_the_whole_suite(pytester):
    run = certify(
        pytester,
        GOOD_RESUMABLE,
        CONTRACT_OPTION,
        f"--world-sizes={GROUP_WORLD_SIZES}",
        ranks="all",
    )
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(RESUMABLE_CONTRACT).flags, run.explain()
    assert run.written["contract"]["name"] == RESUMABLE_CONTRACT
    assert run.verdict.startswith(f"VERDICT: {GOOD_RESUMABLE} conforms"), run.verdict


@pytest.mark.parametrize("spec", list(RESUME_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_resume_bug_fails_exactly_its_invariants(pytester, spec):
    run = certify_rejected(pytester, spec, RESUME_BAD[spec], CONTRACT_OPTION, "--repro=on")
    assert_reproduced(run, GOOD_RESUMABLE)


@pytest.mark.parametrize("spec", list(RESUME_GROUP_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_resume_bug_of_process_groups_fails_exactly_its_invariants_in_the_whole_suite(pytester, spec):
    run = certify_rejected(
        pytester,
        spec,
        RESUME_GROUP_BAD[spec],
        CONTRACT_OPTION,
        f"--world-sizes={GROUP_WORLD_SIZES}",
        "--repro=on",
        ranks="all",
    )
    assert_reproduced(run, GOOD_RESUMABLE, read_in_groups=READ_IN_GROUPS)


def test_a_loader_checkpoint_follows_the_rank_s_last_batch_not_the_loader_s_end(pytester):
    """The draws take k up to ceil(batches / W), and a batch sampler that drops an
    incomplete last round under drop_last (as accelerate's BatchSamplerShard does) holds fewer.
    k is cut to the rank's epoch: taking more runs the loader's iterator to its end, after
    which torchdata resumes at a fresh pass, whatever the sampler's state (N=5, W=4: the
    conforming sampler was charged with replaying its one batch)."""
    run = certify(
        pytester,
        "selftests.corpus.resumable:ResumableBatchShard",
        "--contract=batch+resumable",
        "--world-sizes=4",
        "-k",
        "test_resume_through_stateful_dataloader and not workers",
        ranks="groups",
        paths=(CONFORMANCE / "test_resume_loader.py",),
    )
    assert run.statuses["resumes_through_loader"] == "held", run.explain()
    assert run.failed_invariants == set(), run.explain()


def test_a_batch_sampler_s_resume_failures_are_reproduced_reading_its_batches(pytester):
    """Each resume invariant a sampler that yields batches fails gets a script that reads each
    rank's batches as the suite does (k counts batches), in one process or, through a
    StatefulDataLoader, in a gloo group of W processes: it fails on Megatron's sampler, and holds
    on the conforming ResumableBatchShard."""
    run = certify(
        pytester,
        MEGATRON_RANDOM,
        "--contract=batch+resumable",
        "--repro=on",
        f"--world-sizes={GROUP_WORLD_SIZES}",
        paths=(PROPERTIES / "test_resume.py", CONFORMANCE / "test_resume_loader.py"),
        ranks="all",
        profile="dev",  # the selftest profile draws too few cases the sampler does not raise on
    )
    failures = {"resume_continues", "resume_exactly_once", "later_epochs_after_resume", "stale_state_refused"}
    # ...and resumes_through_loader in a gloo group, read by a script of W processes (StatefulDataLoader(batch_sampler=)).
    assert failures | {"other_world_size_refused", "resumes_through_loader"} <= run.failed_invariants, run.explain()
    assert_reproduced(run, "selftests.corpus.resumable:ResumableBatchShard", read_in_groups=READ_IN_GROUPS)


def _without_torchdata(pytester, spec):
    """The loader resume alone, for ``spec``, where importing torchdata fails."""
    hidden = pytester.mkpydir("torchdata")  # the subprocess's cwd comes first on sys.path
    (hidden / "__init__.py").write_text('raise ImportError("torchdata hidden by the selftest")\n')
    return certify(
        pytester,
        spec,
        CONTRACT_OPTION,
        f"--world-sizes={GROUP_WORLD_SIZES}",
        ranks="groups",
        paths=(CONFORMANCE / "test_resume_loader.py",),
    )


def test_without_torchdata_the_loader_resume_is_not_run_and_says_how_to_install_it(pytester):
    """Where torchdata's StatefulDataLoader cannot be imported, resumes_through_loader skips:
    the verdict reports it not run, with the reason, never held."""
    run = _without_torchdata(pytester, GOOD_RESUMABLE)
    invariant = next(i for i in run.written["invariants"] if i["flag"] == "resumes_through_loader")
    assert invariant["status"] == "not run", run.explain()
    assert invariant["details"] and all("pip install torchdata" in detail for detail in invariant["details"]), invariant
    assert "torchdata hidden by the selftest" in invariant["details"][0], invariant
    assert run.exit_code == pytest.ExitCode.NO_TESTS_COLLECTED, run.explain()


def test_a_sampler_without_state_dict_fails_every_resumable_invariant_and_nothing_else(pytester):
    """torch's DistributedSampler has no state_dict(): it conforms to torch, and cannot be resumed."""
    run = certify(pytester, "torch.utils.data.distributed:DistributedSampler", CONTRACT_OPTION)
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert run.failed_invariants == {flag for flag in RESUMABLE.flags if flag not in GROUP_ONLY}, run.explain()
    for flag in run.failed_invariants:
        assert "has no state_dict() and no load_state_dict()" in run.counterexamples(flag)[0]["message"]


def test_the_composed_contract_is_the_base_and_the_extension(pytester):
    composed = contract_named(RESUMABLE_CONTRACT)
    assert isinstance(composed, SamplerContract)
    assert composed.flags == TORCH.flags | RESUMABLE.flags
    assert (composed.layout, composed.length_rule, composed.defaults) == (
        TORCH.layout,
        TORCH.length_rule,
        TORCH.defaults,
    )
    listing = pytester.runpytest_subprocess("-p", "sampler_conformance.plugin", "--list-contracts")
    text = "\n".join(listing.outlines)
    assert "+resumable (extension" in text and all(flag in text for flag in RESUMABLE.flags), text


@pytest.mark.parametrize(
    ("contract", "message"),
    [
        ("torch+nope", "'nope' is not an extension"),
        (
            "stream+elastic",
            "'elastic' is not an extension of 'stream' (iterable_dataset contracts take resumable, mesh)",
        ),
        ("resumable", "'resumable' is not a base contract"),
        ("infinite+resumable", "the samplers of 'infinite' never end, so there is no epoch to resume in"),
    ],
)
def test_a_contract_that_does_not_compose_is_a_usage_error(pytester, contract, message):
    result = pytester.runpytest_subprocess("-p", "sampler_conformance.plugin", f"--contract={contract}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = "\n".join(result.errlines)
    assert f"--contract={contract!r}: {message}" in errors, errors


def test_every_resumable_invariant_is_declared_with_a_resume_bug():
    assert RESUMABLE.flags <= set(REGISTRY)
    proven = {rejection.flag for rejection in (RESUME_BAD | RESUME_GROUP_BAD).values()}
    assert RESUMABLE.flags <= proven


def test_an_invariant_some_of_whose_variants_could_apply_is_not_run_rather_than_not_applicable(pytester):
    """torch's ElasticDistributedSampler has no drop_last, so the loader resume's drop_last
    variants are not applicable; its others could apply but skip without torchdata. The
    invariant is not run, naming both reasons, never not applicable."""
    run = _without_torchdata(pytester, "sampler_conformance.adapters.torch_elastic:ElasticDistributedSampler")
    invariant = next(i for i in run.written["invariants"] if i["flag"] == "resumes_through_loader")
    assert invariant["status"] == "not run", run.explain()
    reasons = " ".join(invariant["details"])
    assert "pip install torchdata" in reasons and "no `drop_last` parameter" in reasons, invariant


FAIRCHEM = "selftests.corpus.fairchem:stateful_distributed_sampler"


def test_a_sampler_resumed_by_a_count_its_loop_keeps_is_certified_through_its_entry_point(pytester):
    """fairchem's sampler has no state_dict: its loop resumes it with
    set_epoch_and_start_iteration(epoch, start_iter), which the factory declares
    (adapters/resumed_by_count.py). Its resume holds; the count carries nothing to refuse a
    stale state or another world size with; and its len() after a start counts the whole
    epoch, which the run says. Without the entry point no run could be resumed at all."""
    run = certify(pytester, FAIRCHEM, CONTRACT_OPTION, paths=(PROPERTIES / "test_resume.py",))
    assert run.failed_invariants == {"stale_state_refused", "other_world_size_refused"}, run.explain()
    for flag in ("resume_continues", "resume_exactly_once", "resume_at_boundaries", "later_epochs_after_resume"):
        assert run.statuses[flag] == "held", run.statuses
    assert LEN_COUNTS_THE_EPOCH in run.written["findings"], run.written["findings"]
