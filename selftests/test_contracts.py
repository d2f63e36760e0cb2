"""Contracts, --without, --list-contracts, the certificate and JUnit output, end to end.

Each contract certifies a known-good sampler of its family and rejects a known-bad one
through the invariant meant for it; the certificate of a failing run validates against
the schema and names the broken invariant.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree

import jsonschema
import numpy as np
import pytest
from torch.utils.data import BatchSampler, DistributedSampler

from sampler_conformance.adapters.torch_batches import LabelGroups, RepeatedGroups, per_rank_blocks
from sampler_conformance.core.case import Observation
from sampler_conformance.core.subject import SpecError
from sampler_conformance.report.certificate import SCHEMA_PATH
from sampler_conformance.subjects import GROUP_ONLY, REGISTRY, describe_contracts
from sampler_conformance.subjects.common.index_dataset import IndexDataset
from sampler_conformance.subjects.index_sampler.batch_checks import check_share_batched, check_whole_batches
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.contracts import (
    BATCH,
    GROUPS,
    LABELS,
    RANK_BATCHES,
    RANK_BLOCKS,
)
from sampler_conformance.subjects.index_sampler.contracts import CONTRACTS as INDEX_CONTRACTS
from sampler_conformance.subjects.index_sampler.group_checks import (
    check_label_grouped,
    check_leftovers_bounded,
    check_read_once,
    check_repeat_groups,
    check_selected_once,
)
from sampler_conformance.subjects.index_sampler.order_checks import check_ranks_agree
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC, check_fit, load_plug
from sampler_conformance.subjects.index_sampler.repro_groups import READ_IN_GROUPS

from .catalogue import CONFORMANCE_BAD, FAMILIES_BAD, GROUP_WORLD_SIZES
from .corpus.families import ShardedBatches, SplitBatches
from .reproduced import assert_reproduced
from .suite_run import CONFORMANCE, PROPERTIES, REPO, RUN_TIMEOUT_S, certify, certify_rejected

FAMILIES = "selftests.corpus.families"

GOOD = [
    pytest.param("contiguous", "ContiguousBlocks", id="contiguous"),
    pytest.param("partition", "ExactPartition", id="partition"),
    pytest.param("infinite", "InfiniteStream", id="infinite"),
    pytest.param("batch", "ShardedBatches", id="batch"),
]


def _load_certificate(path) -> dict:
    certificate = json.loads(path.with_name(path.name + ".json").read_text())
    jsonschema.validate(certificate, json.loads(SCHEMA_PATH.read_text()))
    return certificate


def _statuses(certificate: dict) -> dict[str, str]:
    return {invariant["flag"]: invariant["status"] for invariant in certificate["invariants"]}


@pytest.mark.parametrize(("contract", "sampler"), GOOD)
def test_contract_certifies_its_known_good_sampler(pytester, contract, sampler, tmp_path):
    """In-process alone: every promised invariant holds but those only real groups check,
    which are not run, so the verdict is PARTIAL (the whole suite is proven in test_good_samplers)."""
    run = certify(pytester, f"{FAMILIES}:{sampler}", f"--contract={contract}", f"--certificate={tmp_path / 'cert'}")
    assert run.exit_code == 0, run.explain()
    certificate = _load_certificate(tmp_path / "cert")
    assert certificate["verdict"]["state"] == "partial" and certificate["verdict"]["conforms"] is False
    statuses = _statuses(certificate)
    promised = set(certificate["contract"]["flags"])
    assert {f for f in promised if statuses[f] == "not run"} == promised & GROUP_ONLY, statuses
    assert {statuses[f] for f in promised - GROUP_ONLY} <= {"held", "not applicable"}, statuses
    assert any(statuses[f] == "held" for f in promised)


@pytest.mark.parametrize("spec", list(FAMILIES_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_contract_rejects_its_known_bad_sampler(pytester, spec, tmp_path):
    """The exact invariants its ``@rejected(...)`` declares, each titled, with its case and
    draws in the certificate, under the contract the sampler breaks; each failure's script
    (docs/reproductions.md) exits 1 on it and 0 on the contract's reference."""
    rejection = FAMILIES_BAD[spec]
    failed = rejection.failed
    repro = ("--repro=on", "--repro-dir=repros")  # in the run's folder: the summary names them by a relative path
    run = certify(pytester, spec, f"--contract={rejection.under}", f"--certificate={tmp_path / 'cert'}", *repro)
    assert run.exit_code == 1, run.explain()
    assert rejection.test in run.failed_tests, run.explain()
    certificate = _load_certificate(tmp_path / "cert")
    assert {flag for flag, status in _statuses(certificate).items() if status == "failed"} == failed, run.explain()
    assert certificate["verdict"]["state"] == "does not conform" and certificate["verdict"]["conforms"] is False
    assert certificate["run"]["exit_status"] == 1
    for flag in failed:
        assert f"[{REGISTRY[flag].title}]" in run.output, run.explain()
        first = next(i for i in certificate["invariants"] if i["flag"] == flag)["counterexamples"][0]
        assert first["flag"] == flag and first["title"] == REGISTRY[flag].title, first
        assert "Draw 1 (W (num_replicas)): " in "\n".join(first["draws"]) or first["test"].startswith("test_edge_sizes")
        assert first["case"].startswith("N="), first
        assert f"`{flag}`) | **failed**" in (tmp_path / "cert.md").read_text()
    assert_reproduced(run, _reference(rejection.under))


def _reference(contract: str) -> str:
    """The sampler a contract's scripts hold on: its reference, or its known-good sampler here."""
    good = {param.values[0]: f"{FAMILIES}:{param.values[1]}" for param in GOOD}
    return INDEX_CONTRACTS[contract].reference or good.get(contract, DEFAULT_SPEC)


def test_a_contract_of_ones_own_promises_is_certified_and_named_by_them(pytester, tmp_path):
    """``--contract=P,Q,...``: the promises' invariants alone are judged, and the certificate
    records the composition. PadsFromTail fails the two it breaks under torch; the order and
    argument promises it was not given are not judged."""
    composition = "valid,finite_epochs,padded_epochs,strided"
    run = certify(
        pytester,
        "selftests.corpus.known_bad:PadsFromTail",
        f"--contract={composition}",
        f"--certificate={tmp_path / 'c'}",
    )
    assert run.exit_code == 1, run.explain()
    certificate = _load_certificate(tmp_path / "c")
    assert {f for f, status in _statuses(certificate).items() if status == "failed"} == {"pads_from_head", "strided"}
    assert _statuses(certificate)["reshuffles_on_set_epoch"] == "not promised"
    contract = certificate["contract"]
    assert (contract["name"], contract["family"]) == (composition, "composed")
    assert [p["name"] for p in contract["promises"]] == composition.split(",")
    assert f"does NOT conform to contract '{composition}'" in run.output, run.explain()


@pytest.mark.parametrize(
    ("orders", "diagnosis"),
    [
        # Each process's share of the group's order, though each was asked for the one-rank order.
        (([4, 0, 2], [1, 3, 4]), "the sampler takes its rank and world size from the process group, not from"),
        # Two whole orders that differ: a per-process shuffle.
        (([4, 0, 2, 1, 3], [1, 3, 4, 0, 2]), "the order depends on per-process state, so the ranks' shares overlap"),
    ],
)
def test_agrees_across_ranks_says_why_the_processes_differ(orders, diagnosis):
    """FunASR's sampler reads its rank from the group whatever it is given: the evidence (each
    process yields fewer than N, and together every index) names that, not a shuffle."""
    case = IndexCase(dataset_size=5, world_size=2)
    (violation,) = check_ranks_agree([Observation(case, (np.array(order),), (len(order),)) for order in orders])
    assert diagnosis in violation.message, violation


def _batched(case: IndexCase, make) -> Observation:
    """Every rank's batches of the batch sampler ``make(num_replicas, rank)`` builds."""
    batches = tuple(
        tuple(np.asarray(b, dtype=np.int64) for b in make(case.world_size, rank)) for rank in range(case.world_size)
    )
    indices = tuple(np.concatenate(b) if b else np.empty(0, np.int64) for b in batches)
    return Observation(case, indices, tuple(len(b) for b in batches), batches=batches)


def _strided_shares_batched(case: IndexCase, sampler_drops: bool):
    """DataLoader(batch_size=B, sampler=DistributedSampler(...)): each rank batches its own strided share."""
    dataset = IndexDataset(case.dataset_size)

    def make(world, rank):
        shuffled: DistributedSampler[int] = DistributedSampler(
            dataset, world, rank, shuffle=case.shuffle, seed=case.seed, drop_last=sampler_drops
        )
        return BatchSampler(shuffled, case.batch_size, drop_last=case.drop_last)

    return make


@pytest.mark.parametrize(("sampler_drops", "loader_drops"), [(False, False), (False, True), (True, True)])
def test_whole_batches_names_the_layout_of_strided_shares_batched(sampler_drops, loader_drops):
    """The layout of DataLoader(batch_size=B, sampler=DistributedSampler(...)) fails whole_batches
    saying which layout it follows, and which the batch contract promises."""
    case = IndexCase(dataset_size=11, world_size=2, drop_last=loader_drops, batch_size=2)
    make = _strided_shares_batched(case, sampler_drops)
    (violation,) = check_whole_batches(_batched(case, make), BATCH, _batched(case.with_(world_size=1), make))
    assert violation.message.startswith("rank 0's batch 0 should be batch 0 of the one-rank sequence, "), violation
    assert violation.message.endswith(
        ": each rank cuts its batches from its own strided share of one order Q (rank r's batches are Q[r::2] cut "
        "into batches of 2), the layout of DataLoader(batch_size=2, sampler=DistributedSampler(...)); the batch "
        "contract promises accelerate's, where rank r gets whole batches r, r+2, r+4, ... of the one-rank "
        "sequence; --contract=rank_batches promises this layout"
    ), violation


@pytest.mark.parametrize(("sampler_drops", "loader_drops"), [(False, False), (False, True), (True, True)])
@pytest.mark.parametrize("dataset_size", [0, 1, 5, 11, 12])
def test_share_batched_holds_for_strided_shares_batched(sampler_drops, loader_drops, dataset_size):
    """DataLoader(batch_size=B, sampler=DistributedSampler(...)) read as batches keeps share_batched,
    with either drop_last, at W=3 and B=2 (N < W, N a multiple of W x B, neither)."""
    case = IndexCase(dataset_size=dataset_size, world_size=3, drop_last=loader_drops, batch_size=2)
    make = _strided_shares_batched(case, sampler_drops)
    assert check_share_batched(_batched(case, make), RANK_BATCHES, _batched(case.with_(world_size=1), make)) == []


@pytest.mark.parametrize("drop_last", [False, True], ids=["keep_last", "drop_last"])
@pytest.mark.parametrize("dataset_size", [0, 1, 5, 11, 12])
def test_share_batched_holds_for_contiguous_shares_batched_under_rank_blocks(drop_last, dataset_size):
    """The reference of rank_blocks (a BatchSampler over maskrcnn-benchmark's contiguous
    blocks) keeps share_batched at W=3 and B=2; the strided layout fails it, saying where."""
    case = IndexCase(dataset_size=dataset_size, world_size=3, drop_last=drop_last, batch_size=2)
    dataset = IndexDataset(case.dataset_size)

    def make(world, rank):
        return per_rank_blocks(dataset, world, rank, seed=case.seed, drop_last=case.drop_last, batch_size=2)

    assert check_share_batched(_batched(case, make), RANK_BLOCKS, _batched(case.with_(world_size=1), make)) == []
    strided = _strided_shares_batched(case, drop_last)
    found = check_share_batched(_batched(case, strided), RANK_BLOCKS, _batched(case.with_(world_size=1), strided))
    if (dataset_size // 3 if drop_last else -(-dataset_size // 3)) > 1:  # else both layouts give rank r Q[r]
        (violation,) = found
        assert "should be item" in violation.message and "of its contiguous share Q[0:" in violation.message, found


def test_share_batched_fails_whole_batches_dealt_round_robin_saying_where():
    """accelerate's layout (rank r takes whole batches r, r+W, ...) is not the per-rank one."""
    case = IndexCase(dataset_size=11, world_size=2, shuffle=False, batch_size=2)

    def make(world, rank):
        return ShardedBatches(IndexDataset(case.dataset_size), world, rank, shuffle=False, batch_size=2)

    (violation,) = check_share_batched(_batched(case, make), RANK_BATCHES, _batched(case.with_(world_size=1), make))
    assert violation.message.startswith(
        "rank 0's item 1 should be item 1 of its strided share Q[0::2] = [0, 2, 4, 6, 8, 10], got 1"
    ), violation


@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("batch_size", [1, 2, 3])
def test_repeated_groups_hold_where_a_group_spans_ranks(world_size, batch_size):
    """trl's layout keeps both invariants of repeated groups for every G that divides W x B,
    those that do not divide B included: a group's copies then sit on two ranks, and only the
    batch gathered rank by rank holds them in a row."""
    for repeats in (g for g in range(1, world_size * batch_size + 1) if world_size * batch_size % g == 0):
        for dataset_size in (0, 1, 5, 12, 13):
            case = IndexCase(dataset_size, world_size, batch_size=batch_size, repeats=repeats)

            def make(world, rank, case=case):
                dataset = IndexDataset(case.dataset_size)
                return RepeatedGroups(dataset, world, rank, batch_size=case.batch_size, repeats=case.repeats)

            observation = _batched(case, make)
            assert check_repeat_groups(observation, GROUPS) == check_selected_once(observation, GROUPS) == [], case


LABEL_COUNTS = [(2, 2), (3, 2, 1), (9, 4, 4), (30, 2, 2, 1), (5, 5, 5, 5, 5, 5, 5, 5), (1, 7, 2, 11, 3)]


@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("batch_size", [4, 6])
def test_label_groups_hold_on_every_labelling(world_size, batch_size):
    """The reference keeps the three invariants of label-grouped batches with one label
    dominant, labels of one item, odd counts and many alike, with drop_last or without."""
    for counts in LABEL_COUNTS:
        for drop_last in (False, True):
            case = IndexCase(sum(counts), world_size, drop_last=drop_last, batch_size=batch_size, label_counts=counts)

            def make(world, rank, case=case):
                labels = case.labels().tolist()
                dataset = IndexDataset(case.dataset_size)
                return LabelGroups(dataset, world, rank, drop_last=case.drop_last, batch_size=batch_size, labels=labels)

            observation = _batched(case, make)
            checks = (check_label_grouped, check_read_once, check_leftovers_bounded)
            assert [check(observation, LABELS) for check in checks] == [[], [], []], case


def test_a_sampler_lacking_an_option_its_contract_builds_it_with_is_a_usage_error():
    """Before any test: under `labels` a batch sampler without labels= is refused, naming it;
    under `batch` the same sampler fits, and DistributedSampler, without batch_size=, does not."""
    whole_batches = load_plug("sampler_conformance.adapters.torch_batches:WholeBatches")
    with pytest.raises(SpecError, match="takes no labels=, which --contract=labels builds it with"):
        check_fit(whole_batches, LABELS)
    check_fit(whole_batches, BATCH)
    with pytest.raises(SpecError, match="takes no batch_size=, which --contract=batch builds it with"):
        check_fit(load_plug("torch.utils.data:DistributedSampler"), BATCH)


def test_label_checks_say_which_batch_index_and_label():
    """Six items of labels 0 and 1, four of label 2: each check names what it found."""
    case = IndexCase(dataset_size=16, world_size=2, batch_size=4, label_counts=(6, 6, 4))
    labels = case.labels()
    of = {label: np.flatnonzero(labels == label).tolist() for label in range(3)}
    one_label = np.array(of[2])  # four items of label 2
    mixed = np.array(of[0][:2] + of[1][:2])
    batches = ((one_label,), (mixed,))
    observation = Observation(case, tuple(b[0] for b in batches), (1, 1), batches=batches)
    (violation,) = check_label_grouped(observation, LABELS)
    assert violation.message.startswith(f"rank 0's batch 0, {one_label.tolist()}, holds label 2 x4: "), violation
    assert check_leftovers_bounded(observation, LABELS) == []  # 3 of label 1 beyond one, under W x B = 8

    twice = ((mixed, one_label), (mixed, one_label))
    observation = Observation(case, tuple(np.concatenate(b) for b in twice), (2, 2), batches=twice)
    (violation,) = check_read_once(observation, LABELS)
    assert violation.message.startswith(
        f"index {mixed.min()} is read 2 times before the epoch's last round (rank 0's batch 0, rank 1's batch 0); "
        f"4 indices are read more than once: {sorted(mixed.tolist())}"
    ), violation

    alone = ((one_label,),)
    observation = Observation(case.with_(world_size=1), (one_label,), (1,), batches=alone)
    (violation,) = check_leftovers_bounded(observation, LABELS)
    assert violation.message.startswith(
        "12 of N=16 items are left out of the epoch, label 0: 6 of 6, label 1: 6 of 6; beyond one item a label and "
        "the excess of label 0 (the one with the most left), 5 could have been grouped, where fewer than one "
        "round's W x B = 4 may be left"
    ), violation


def test_repeat_groups_says_which_group_mixes_samples():
    """Rank 0's batch [3, 3] and rank 1's [5, 1] gather to [3, 3, 5, 1]: its second group mixes two samples."""
    case = IndexCase(dataset_size=6, world_size=2, batch_size=2, repeats=2)
    batches = ((np.array([3, 3]),), (np.array([5, 1]),))
    observation = Observation(case, tuple(b[0] for b in batches), (1, 1), batches=batches)
    (violation,) = check_repeat_groups(observation, GROUPS)
    assert violation.message.startswith(
        "generation batch 0 (round 0 of the ranks' batches, rank 0's first, as the trainer's gather concatenates "
        "them) should be groups of G=2 copies of one index, but group 1 holds [5, 1]"
    ), violation


# truncated's reference, DistributedSampler with drop_last=True, is what the user's factory that
# test_installed_package certifies from the wheel builds: that run is its proof.
@pytest.mark.parametrize(
    "contract",
    [c for c in INDEX_CONTRACTS.values() if c.reference and c.name != "truncated"],
    ids=lambda contract: contract.name,
)
def test_the_contracts_references_conform_through_the_whole_suite(pytester, contract):
    """What ``sampler-conformance --contract=NAME`` certifies when no sampler is named."""
    run = certify(
        pytester, contract.reference, f"--contract={contract.name}", f"--world-sizes={GROUP_WORLD_SIZES}", ranks="all"
    )
    assert run.exit_code == 0 and run.verdict.startswith(f"VERDICT: {contract.reference} conforms"), run.explain()


def test_whole_batches_of_another_layout_say_only_which_batch_differs():
    case = IndexCase(dataset_size=11, world_size=2, batch_size=4)

    def make(world, rank):
        return SplitBatches(range(case.dataset_size), world, rank, seed=case.seed, batch_size=case.batch_size)

    (violation,) = check_whole_batches(_batched(case, make), BATCH, _batched(case.with_(world_size=1), make))
    assert violation.message.startswith("rank 0's batch 0 should be batch 0 of the one-rank sequence, ")
    assert "strided share" not in violation.message, violation


def test_contiguous_contract_rejects_a_strided_sampler(pytester):
    """torch's own sampler is strided: under --contract=contiguous its blocks are wrong, and so is
    the global order rebuilt from contiguous blocks (its head and its padding)."""
    run = certify(pytester, "torch.utils.data:DistributedSampler", "--contract=contiguous")
    assert run.exit_code == 1, run.explain()
    assert run.failed_invariants == {"contiguous", "pads_from_head", "unshuffled_in_order"}, run.explain()


@pytest.mark.parametrize("spec", list(CONFORMANCE_BAD), ids=lambda spec: CONFORMANCE_BAD[spec].flag)
def test_conformance_invariant_rejects_its_known_bad_sampler(pytester, spec):
    """Invariants only real process groups check, each with a sampler that breaks it there, run
    through the whole suite at W=2: the exact invariants its ``@rejected(...)`` declares."""
    rejection = CONFORMANCE_BAD[spec]
    run = certify_rejected(
        pytester,
        spec,
        rejection,
        f"--contract={rejection.under}",
        "--world-sizes=2",
        "--rank-timeout=60",
        "--repro=on",
        ranks="all",
    )
    assert_reproduced(run, _reference(rejection.under), read_in_groups=READ_IN_GROUPS)


def test_without_turns_an_invariant_off_and_says_so(pytester, tmp_path):
    run = certify(
        pytester,
        f"{FAMILIES}:ContiguousTailPadding",
        "--contract=contiguous",
        "--without=pads_from_head",
        f"--certificate={tmp_path / 'cert'}",
        "-k",
        "pads_from_head or edge_sizes",
    )
    assert "test_per_epoch_invariant" not in run.failed_tests, run.explain()
    assert "turned off  pads_from_head" in run.output, run.explain()
    assert "of invariants contract 'contiguous' does not promise or --without turned off" in run.output, run.explain()
    certificate = _load_certificate(tmp_path / "cert")
    assert certificate["contract"]["turned_off"] == ["pads_from_head"]
    assert _statuses(certificate)["pads_from_head"] == "turned off"
    assert "turned off: pads_from_head" in run.verdict, run.verdict


def test_a_run_with_an_invariant_turned_off_is_partial_never_conforming(pytester):
    run = certify(pytester, "torch.utils.data:DistributedSampler", "--without=seed_effective")
    assert run.exit_code == 0, run.explain()  # nothing failed
    assert run.written["verdict"]["state"] == "partial", run.verdict
    assert run.verdict.startswith("PARTIAL: ") and "turned off: seed_effective" in run.verdict, run.verdict
    assert "conforms" not in run.verdict, run.verdict


def test_sampler_that_needs_a_process_group_is_not_certified_in_process(pytester):
    pytester.makepyfile(
        group_only="""
        from torch.utils.data import DistributedSampler

        def make(dataset, shuffle=True, seed=0, drop_last=False):
            return DistributedSampler(dataset, shuffle=shuffle, seed=seed, drop_last=drop_last)

        make.needs_process_group = True
        """
    )
    run = certify(pytester, f"{pytester.path / 'group_only.py'}:make", "-k", "lengths")
    assert run.exit_code == 5, run.explain()  # nothing was proven: no success exit
    assert "NO VERDICT" in run.output and "takes its rank from the process group" in run.output, run.explain()


GROUP_ONLY_SAMPLERS = """
import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler


def from_group(dataset, shuffle=True, seed=0, drop_last=False):
    # Takes num_replicas/rank from the process group, as mmengine's DefaultSampler does.
    return DistributedSampler(dataset, shuffle=shuffle, seed=seed, drop_last=drop_last)


from_group.needs_process_group = True


class RankSeeded(DistributedSampler):
    # Bug: every rank seeds its shuffle with its own rank (detectron2 #4438).
    def __init__(self, dataset, shuffle=True, seed=0, drop_last=False):
        super().__init__(dataset, shuffle=shuffle, seed=seed + dist.get_rank(), drop_last=drop_last)


def rank_seeded(dataset, shuffle=True, seed=0, drop_last=False):
    return RankSeeded(dataset, shuffle=shuffle, seed=seed, drop_last=drop_last)


rank_seeded.needs_process_group = True
"""


@pytest.mark.parametrize(("factory", "exit_code"), [("from_group", 0), ("rank_seeded", 1)])
def test_sampler_that_needs_a_process_group_is_certified_in_real_groups(pytester, factory, exit_code):
    pytester.makepyfile(group_only=GROUP_ONLY_SAMPLERS)
    result = pytester.runpytest_subprocess(
        str(PROPERTIES / "test_per_epoch.py"),
        f"--sampler={pytester.path / 'group_only.py'}:{factory}",
        "--ranks=groups",
        "--world-sizes=2",
        "-k",
        "per_epoch_invariant",
        "-p",
        "no:cacheprovider",
        "--hypothesis-seed=0",
        timeout=RUN_TIMEOUT_S,
    )
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == exit_code, output[-4000:]
    if exit_code == 0:
        # -k selected one test: what it checked held, the rest was not run.
        assert "PARTIAL: a rerun of -k 'per_epoch_invariant', not a certification: no failure" in output
        assert "conforms" not in output, output[-4000:]
        # Checks that need explicit num_replicas/rank are skipped with the reason, not passed.
        assert "cannot be built with explicit num_replicas/rank" in output, output[-4000:]
    else:
        assert "[union coverage]" in output, output[-4000:]


def test_list_contracts_prints_every_contract_and_exits(pytester):
    result = pytester.runpytest_subprocess(str(PROPERTIES), "--list-contracts", timeout=60)
    assert result.ret == 0
    text = "\n".join(result.outlines)
    for name in ("torch", "contiguous", "partition", "infinite", "batch"):
        assert f"{name} (family " in text
    assert "guards against" in text


def test_list_contracts_narrows_to_a_contract_a_promise_or_an_invariant():
    """``--list-contracts=stream`` was refused: a name narrows the listing (713 lines in all)."""
    everything = describe_contracts()
    stream = describe_contracts("stream")
    assert stream.startswith("stream (family ") and "stream_exact (family" not in stream
    only_flag = describe_contracts("valid_indices")
    flags = {line.split()[0] for line in only_flag.splitlines() if line.startswith("    ") and line.split()}
    assert flags == {"valid_indices", "checked"}, flags  # the invariant and its "checked ..." line
    assert len(stream) < len(everything) and len(only_flag) < len(everything)
    with pytest.raises(ValueError, match="no subject, contract, extension, promise or invariant of that name"):
        describe_contracts("nonsense")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--list-contracts=nonsense", "--list-contracts=nonsense: no subject, contract"),
        ("--contract=strided_blocks", "--contract='strided_blocks': 'strided_blocks' is not a base contract"),
        ("--contract=valid,strided", "none of the promises says what each epoch yields; add one of padded_epochs"),
        ("--without=covers,nonsense", "unknown invariant(s) nonsense"),
        ("--rank-timeout=-1", "--rank-timeout='-1' must be positive seconds"),
        ("--read-budget=0", "--read-budget='0' must be positive seconds"),
    ],
)
def test_bad_option_is_a_usage_error(pytester, option, message):
    run = certify(pytester, "torch.utils.data:DistributedSampler", option)
    assert run.exit_code == 4, run.explain()
    assert message in run.output and "Traceback" not in run.output, run.explain()


def test_junit_xml_names_the_invariant_of_each_test_case(pytester, tmp_path):
    junit = tmp_path / "junit.xml"
    run = certify(pytester, "torch.utils.data:DistributedSampler", f"--junitxml={junit}", "-k", "length or len_matches")
    assert run.exit_code == 0, run.explain()
    cases = ElementTree.parse(junit).getroot().iter("testcase")
    invariants = {
        case.get("name"): {p.get("value") for p in case.iter("property") if p.get("name") == "invariant"}
        for case in cases
    }
    assert invariants["test_per_epoch_invariant[simulated-equal_length-keep_last]"] == {"equal_length"}
    assert invariants["test_per_epoch_invariant[simulated-len_matches_iter-drop_last]"] == {"len_matches_iter"}


FACTORY = """
from torch.utils.data import DistributedSampler


def make(dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
    return DistributedSampler(dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=drop_last)
"""


@pytest.mark.parametrize("attribute", ["make", "DistributedSampler"])
def test_summary_says_when_defaults_judge_a_factory(pytester, attribute):
    """A factory's defaults are its own, not the sampler's: the summary notes it, only then."""
    pytester.makepyfile(factory=FACTORY)
    run = certify(
        pytester,
        f"{pytester.path / 'factory.py'}:{attribute}",
        "--world-sizes=1",
        "-k",
        "defaults or default_to_the_group",
        ranks="groups",
        paths=(CONFORMANCE / "test_process_groups.py",),
    )
    assert run.statuses["defaults"] == run.statuses["group_defaults"] == "held", run.explain()
    noted = "judge the defaults of its signature" in run.summary
    assert noted == (attribute == "make") and run.written["sampler"]["is_factory"] == noted, run.explain()


def test_the_listing_points_to_each_known_bad_where_it_lies():
    """--list-contracts names each known-bad by its file in the repository, which a user of
    the installed package can open; before, a module name (selftests.corpus.known_bad:...)
    that does not import from the package."""
    found = re.findall(r"known-bad: (\S+\.py):(\w+)", describe_contracts())
    declared = {i.known_bad.replace(".", "/").replace(":", ".py:") for i in REGISTRY.values()}
    assert {f"{path}:{name}" for path, name in found} == declared
    for path, name in found:
        source = (REPO / path).read_text()
        assert re.search(rf"^(class|def) {name}\b", source, re.M), (path, name)
