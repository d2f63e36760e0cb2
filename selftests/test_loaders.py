"""The data loader subject: its reference conforms to data_loader+elastic+resumable, and each
known-bad loader of selftests/corpus/loader_bad.py fails exactly the invariants its bug breaks.
Each is one certification on simulated ranks under the selftest profile (about 3 s). In a real
group of 2 ranks, read in lock step, a rank that runs out first is seen at that step, and a
loader's workers start from the rank's fork server and are gone once the group closes."""

from __future__ import annotations

import contextlib
import json
import os
import time

import jsonschema
import numpy as np
import pytest
import torch

from sampler_conformance.execution.rank_pool import RankPool
from sampler_conformance.report.certificate import SCHEMA_PATH
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.common.reading import BadIndex
from sampler_conformance.subjects.data_loader import SUBJECT
from sampler_conformance.subjects.data_loader.case import LoaderCase
from sampler_conformance.subjects.data_loader.checks import check_each_instance_once, check_equal_batch_counts
from sampler_conformance.subjects.data_loader.contracts import DATA_LOADER
from sampler_conformance.subjects.data_loader.plug import batch_ids, load_plug
from sampler_conformance.subjects.data_loader.resume_checks import (
    check_epoch_after_resume,
    check_resume_continues,
    check_resume_on_other_dp_size,
)
from sampler_conformance.subjects.data_loader.runs import LoaderEpoch, LoaderResume, LoaderResumeElsewhere
from sampler_conformance.subjects.data_loader.scenarios import read_epochs

from .catalogue import DATA_LOADER_BAD, DATA_LOADER_CONTRACT
from .reproduced import assert_reproduced
from .suite_run import certify, certify_rejected
from .test_rank_pool import POOL_TIMEOUT_S, REAP_GRACE_S

ELASTIC = f"{DATA_LOADER_CONTRACT}+elastic+resumable"


def test_the_reference_holds_every_invariant_of_data_loader_elastic_resumable(pytester):
    """Certified with no spec: the contract's reference, a DataLoader over a
    DistributedSampler, both with drop_last, keeps the world-size promise too, and resumes by
    batch count from its own state, on the same DP size and on another."""
    run = certify(pytester, "", f"--contract={ELASTIC}")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(ELASTIC).flags, run.explain()
    assert run.verdict.startswith(f"VERDICT: {contract_named(ELASTIC).reference} conforms"), run.verdict
    jsonschema.validate(run.written, json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.parametrize("spec", list(DATA_LOADER_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_each_loader_bug_fails_exactly_its_invariants(pytester, spec):
    rejection = DATA_LOADER_BAD[spec]
    run = certify_rejected(pytester, spec, rejection, f"--contract={rejection.under}", "--repro=on")
    assert_reproduced(run, contract_named(rejection.under).reference or SUBJECT.default_spec)


@pytest.mark.parametrize(
    "batch",
    [
        [3, 1],
        torch.tensor([3, 1]),
        np.array([3, 1]),
        {"index": torch.tensor([3, 1]), "input_ids": None},
        {"ids": [3, 1]},
    ],
    ids=["list", "tensor", "array", "olmo-core's index", "ids"],
)
def test_a_batch_carries_its_ids_as_a_list_a_1d_tensor_or_under_index_or_ids(batch):
    assert batch_ids(batch, 0).tolist() == [3, 1]


def test_a_mapping_without_ids_is_not_read():
    with pytest.raises(BadIndex, match="as a mapping with keys \\['input_ids'\\], none of 'index', 'ids'"):
        batch_ids({"input_ids": torch.zeros(2, 4)}, 0)


def test_a_loader_without_state_dict_fails_each_resume_invariant_saying_why():
    """No certification: the views a loader without load_state_dict() leaves (nothing read)."""
    missing = ("load_state_dict",)
    epoch = LoaderEpoch.of(LoaderCase(dataset_size=0, world_size=1, seed=0, epoch=0), [()], None)  # nothing read
    checks = {
        "loader_resume_continues": check_resume_continues(LoaderResume(0, (epoch, epoch), (), missing)),
        "loader_epoch_after_resume": check_epoch_after_resume(LoaderResume(0, (epoch, epoch), (), missing)),
        "loader_resume_on_other_dp_size": check_resume_on_other_dp_size(
            LoaderResumeElsewhere(1, 0, epoch, epoch, missing)
        ),
    }
    for flag, violations in checks.items():
        assert [v.flag for v in violations] == [flag]
        assert violations[0].message.startswith(
            "the loader has no load_state_dict(), so no run can be resumed from its checkpoint; a resumable loader "
            "has state_dict() and load_state_dict(state)"
        ), violations[0].message


def test_in_a_real_group_a_rank_that_runs_out_first_is_seen_at_that_step_and_workers_are_reaped():
    """No certification: one group of 2 ranks, each building its own loader. N=10 in global
    batches of 4: the known-bad gives the 2 instances left over to rank 0 alone, which the lock
    step counts as 3 steps against 2; the reference, through 2 workers a rank, reads 2 each."""
    contract = DATA_LOADER
    case = LoaderCase(dataset_size=10, world_size=2, seed=0, global_batch_size=4)
    pool = RankPool(2, "gloo", POOL_TIMEOUT_S)
    try:
        uneven_plug = load_plug("selftests.corpus.loader_bad:LastGlobalBatchToSomeRanks")
        (uneven,) = read_epochs(pool, uneven_plug, contract, case, [1])
        reference = load_plug(contract.reference)
        (through_workers,) = read_epochs(pool, reference, contract, case.with_(num_workers=2), [1])
        pids = pool.pids
    finally:
        pool.close()
    assert uneven.stepped == (3, 2)
    (violation,) = check_equal_batch_counts(uneven)
    assert violation.message.startswith("rank(s) 1 ran out after 2 batches, while rank(s) 0 had a batch 2"), violation
    assert violation.message.endswith("(seen in lock step, in a real group)"), violation
    assert through_workers.stepped == (2, 2) and not check_each_instance_once(through_workers)
    # Each rank leads a process group of its own, which its fork server and loader workers join;
    # the server's interpreter takes a second or two to end after its rank.
    deadline = time.monotonic() + REAP_GRACE_S
    while (alive := [pid for pid in pids if _group_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive, f"processes of the ranks {alive} outlived close() by {REAP_GRACE_S} s"


def _group_alive(group: int) -> bool:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, 0)
        return True
    return False
