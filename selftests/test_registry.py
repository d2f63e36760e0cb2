"""The invariant registry (each subject's ``invariants.py``, entered in harness/core/invariants.py) is the one declaration, and it is honest:
every invariant is promised by some contract, has its judge or its tests where the registry
says it runs, and names a known-bad sampler that an exact-verdict selftest runs and that
fails it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import pytest

from sampler_conformance import execution, subjects
from sampler_conformance.core.contracts import Promise
from sampler_conformance.core.invariants import Declared, Invariant, OneEpoch, Where
from sampler_conformance.pytest_plugin.ranks import runs_in_groups, runs_in_process
from sampler_conformance.subjects import CONTRACTS, REGISTRY, SUBJECTS, contract_named, describe_contracts, subject_of
from sampler_conformance.subjects.index_sampler.contracts import (
    BATCH,
    CONTIGUOUS,
    CONTIGUOUS_BLOCKS,
    COVERS,
    INFINITE,
    PARTITION,
    STRIDED,
    TORCH,
    SamplerContract,
)

from .catalogue import (
    GENERATED_BEGIN,
    GENERATED_END,
    TABLES,
    invariant_tables,
)
from .suite_run import CONFORMANCE, PROPERTIES, REPO
from .test_rank_pool import MULTIPROCESS_ONLY_BUGS


def _proven() -> dict[tuple[str, str], set[str]]:
    """(known-bad spec, contract) -> the invariants an exact-verdict selftest requires it to fail."""
    proven: dict[tuple[str, str], set[str]] = {}
    for table in TABLES:
        for spec, rejection in table.items():
            proven[(spec, rejection.under)] = proven.get((spec, rejection.under), set()) | rejection.failed
    # The bugs that pass in-process and fail in real groups (selftests/test_rank_pool.py).
    for spec, failed in MULTIPROCESS_ONLY_BUGS.items():
        proven[(spec, TORCH.name)] = proven.get((spec, TORCH.name), set()) | failed
    return proven


@pytest.mark.parametrize("flag", list(REGISTRY))
def test_each_invariant_names_a_known_bad_sampler_that_a_selftest_proves_it_rejects(flag):
    invariant = REGISTRY[flag]
    contract = contract_named(invariant.proven_under)
    subject_of(contract).load(invariant.known_bad)  # it exists, imports and follows its subject's convention
    assert contract.promises(flag)
    failed = _proven().get((invariant.known_bad, invariant.proven_under))
    assert failed is not None, f"no exact-verdict selftest runs {invariant.known_bad} under {invariant.proven_under!r}"
    assert flag in failed, f"the selftest that runs {invariant.known_bad} does not require {flag} to fail: {failed}"


def test_every_invariant_is_promised_by_some_contract():
    extensions: list[Promise] = [e for subject in SUBJECTS.values() for e in subject.extensions.values()]
    extensions += [p for subject in SUBJECTS.values() for _, p in subject.joint_promises.values()]
    promised = set().union(*(c.flags for c in CONTRACTS.values()), *(e.flags for e in extensions))
    assert set(REGISTRY) - promised == set()


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_each_contract_promises_what_its_promises_say(name):
    """A contract's flags are its promises' (nothing added or dropped beside them), each
    promise says something, and no two of its promises share a name. (That they are its
    subject's own invariants, ``Subject`` checks as the subject is made.)"""
    contract = contract_named(name)
    assert contract.composed_of, f"{name} is not composed of promises"
    assert contract.flags == frozenset().union(*(p.flags for p in contract.composed_of)), name
    assert all(promise.flags for promise in contract.composed_of), name
    names = [p.name for p in contract.composed_of]
    assert len(set(names)) == len(names), names


def test_a_contract_takes_its_facts_from_its_promises_and_refuses_two_that_set_one_apart():
    """How the checks read a sampler (its layout across ranks, its length rule, whether it ends
    or yields batches) is set by the promises: two layouts in one contract are refused by name."""
    assert (CONTIGUOUS.layout, PARTITION.length_rule, INFINITE.finite, BATCH.yields_batches) == (
        "contiguous",
        "balanced",
        False,
        True,
    )
    with pytest.raises(
        ValueError,
        match="'strided' and 'contiguous_blocks' cannot be promised together: one says "
        "layout='strided', the other layout='contiguous'",
    ):
        SamplerContract.of((COVERS, STRIDED, CONTIGUOUS_BLOCKS), name="both", family="?", description="two layouts")


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_the_promises_of_a_named_contract_composed_by_a_user_make_the_same_contract(name):
    """``--contract=P,Q,...`` with a named contract's promises promises what it does, and reads
    the sampler by the same facts; only the name and the description differ (and the facts
    a named contract sets beside its promises: micro_batches' step size)."""
    named = contract_named(name)
    composed = contract_named(",".join(p.name for p in named.composed_of))
    assert composed.name == ",".join(p.name for p in named.composed_of)
    assert composed.family == "composed"
    assert composed.composed_of == named.composed_of
    explicit = {"parameter"} if name == "micro_batches" else set()
    same = {"name", "family", "description", "reference", *explicit}
    assert {f: v for f, v in vars(composed).items() if f not in same} == {
        f: v for f, v in vars(named).items() if f not in same
    }


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (
            "valid,padded_epochs,exact_partition,strided",
            "'padded_epochs' and 'exact_partition' each say what each epoch yields; keep one",
        ),
        (
            "valid,finite_epochs,strided",
            "none of the promises says what each epoch yields; add one of padded_epochs, truncated_epochs, exact_partition, permutation_blocks, covers",
        ),
        (
            "valid,finite_epochs,permutation_blocks",
            "'finite_epochs' and 'permutation_blocks' cannot be promised together: one says finite=True, the other finite=False",
        ),
        ("valid,covers,whole_batches,strided", "'whole_batches' and 'strided' cannot be promised together"),
        (
            "valid,finite_epochs,padded_epochs",
            "'padded_epochs' is judged along a layout (strided or contiguous) another promise sets, and none here does; add one of strided, contiguous_blocks",
        ),
        (
            "valid,covers,whole_batches,torch_arguments",
            "'torch_arguments' is judged along a layout (strided or contiguous)",
        ),
        (
            "finite_epochs,covers",
            "every index_sampler contract promises edge_sizes, valid_indices, where a fault or an invalid item is charged; add valid",
        ),
        ("reads_through_workers,stream_order", "add one of exactly_once, padded_once, truncated_once"),
        (
            "batches_run,poisson_draws,within_budget",
            "one says parameter='sample_rate', the other parameter='max_tokens'",
        ),
        (
            "valid,covers,exactly_once",
            "a contract composes the promises of one kind of thing under test, not several (valid of index_sampler; covers of index_sampler; exactly_once of iterable_dataset)",
        ),
        (
            "valid,covers,shuffled",
            "'shuffled' is not a promise of index_sampler contracts; they are valid, across_processes",
        ),
        ("valid,covers,covers", "a promise is named twice"),
        ("valid,covers+elastic", "'elastic' composes only with contracts promising strided or whole_batches"),
        ("valid,permutation_blocks+resumable", "the samplers of 'valid,permutation_blocks' never end"),
    ],
)
def test_a_composition_that_makes_no_contract_is_refused_saying_what_to_change(text, refusal):
    with pytest.raises(ValueError) as refused:
        contract_named(text)
    assert refusal in str(refused.value)


def test_an_extended_contract_is_its_base_and_its_extensions_promises():
    for subject in SUBJECTS.values():
        for base in subject.contracts.values():
            for extension in subject.extensions.values():
                try:
                    extended = contract_named(f"{base.name}+{extension.name}")
                except ValueError:
                    continue  # they do not compose: tests of their own say why
                assert extended.composed_of == (*base.composed_of, extension)
                assert extended.flags == (base.flags | extension.flags) - extension.withdraws


def test_a_promise_two_extensions_make_together_comes_with_both_of_them_and_neither_alone():
    joint = [(subject, *made) for subject in SUBJECTS.values() for made in subject.joint_promises.values()]
    assert joint, "no extension makes a promise beside another (data_loader's +resumable beside +elastic did)"
    for subject, together, promise in joint:
        base = next(iter(subject.contracts))
        assert promise in contract_named(base + together).composed_of
        assert promise.flags <= contract_named(base + together).flags
        for alone in together.strip("+").split("+"):
            assert not promise.flags & contract_named(f"{base}+{alone}").flags, alone
        listed = describe_contracts(together)  # --list-contracts=+elastic+resumable
        assert listed.startswith(f"{together} (extensions together)") and promise.flags <= set(listed.split())


def _declared_on_checks() -> list[Declared]:
    """Every table of invariants declared on their checks (``Declared``, ``OneEpoch``) that a
    module of the subjects or the execution layer holds: found, so that a new one is checked unasked."""
    found: dict[int, Declared] = {}
    for package in (subjects, execution):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            for value in vars(importlib.import_module(module.name)).values():
                if isinstance(value, Declared):
                    found[id(value)] = value
    return list(found.values())


DECLARED_ON_CHECKS = _declared_on_checks()


@pytest.mark.parametrize("declared", DECLARED_ON_CHECKS, ids=lambda declared: declared.invariants[0].flag)
def test_each_invariant_declared_on_its_check_is_the_registrys_record(declared):
    """What a subject's tests are generated from, what its checks declare and what the
    registry holds are one declaration."""
    assert declared.invariants and all(REGISTRY[invariant.flag] is invariant for invariant in declared.invariants)


def test_an_invariant_declared_twice_is_refused():
    table: OneEpoch[Callable[[], list]] = OneEpoch()
    record = Invariant("twice", "declared twice", "a copy that drifts", "corpus:Bad")
    table.declare(record)(list)
    with pytest.raises(ValueError, match="invariant 'twice' is declared twice"):
        table.declare(record)(list)
    declared = Declared()
    declared(record)(list)
    with pytest.raises(ValueError, match="invariant 'twice' is declared twice"):
        declared(record)(list)


def _marked(pytester: pytest.Pytester) -> tuple[set[str], set[str]]:
    """The invariants of the certification's tests that run in-process, and of those that run
    in real groups, every subject's (a run collects one subject's)."""
    in_process: set[str] = set()
    in_groups: set[str] = set()
    for subject in SUBJECTS.values():
        contract = next(iter(subject.contracts))
        items, _ = pytester.inline_genitems(
            str(PROPERTIES), str(CONFORMANCE), "-p", "no:cacheprovider", f"--contract={contract}"
        )
        for item in items:
            if marker := item.get_closest_marker("invariant"):
                (in_process if runs_in_process(item) else in_groups if runs_in_groups(item) else set()).add(
                    marker.args[0]
                )
    return in_process, in_groups


def test_each_invariant_has_tests_where_the_registry_says_it_runs(pytester):
    in_process, in_groups = _marked(pytester)
    assert in_process == {f for f, i in REGISTRY.items() if i.where in (Where.BOTH, Where.IN_PROCESS)}
    assert in_groups == {f for f, i in REGISTRY.items() if i.where in (Where.BOTH, Where.GROUPS)}


def test_a_test_marked_with_an_undeclared_invariant_is_a_usage_error(pytester):
    pytester.makepyfile(
        test_stray="""
        import pytest

        @pytest.mark.invariant("no_such_invariant")
        def test_stray():
            pass
        """
    )
    pytester.makeconftest("pytest_plugins = ['sampler_conformance.plugin']")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    assert "which the registry (sampler_conformance.core.invariants) does not declare" in "\n".join(
        result.errlines + result.outlines
    )


def test_the_docs_invariant_tables_are_the_declarations():
    """docs/contracts.md's tables of every subject's invariants are what the declarations
    generate (``python -m selftests.catalogue``): a new invariant, title or known-bad changes
    the page, or this fails."""
    page = (REPO / "docs" / "contracts.md").read_text()
    assert GENERATED_BEGIN in page and GENERATED_END in page, "docs/contracts.md lost its generated block"
    written = page.split(GENERATED_BEGIN, 1)[1].split(GENERATED_END, 1)[0].strip()
    assert written == invariant_tables(), (
        "docs/contracts.md is stale: paste the block `python -m selftests.catalogue` prints"
    )
