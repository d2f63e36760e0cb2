"""The data loader subject: its reference conforms to data_loader+elastic+resumable, and each
known-bad loader of selftests/corpus/loader_bad.py fails exactly the invariants its bug breaks.
Each is one certification on simulated ranks under the selftest profile (about 3 s)."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
import torch

from sampler_conformance.report.certificate import SCHEMA_PATH
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.common.reading import BadIndex
from sampler_conformance.subjects.data_loader.case import LoaderCase
from sampler_conformance.subjects.data_loader.plug import batch_ids
from sampler_conformance.subjects.data_loader.resume_checks import (
    check_epoch_after_resume,
    check_resume_continues,
    check_resume_on_other_dp_size,
)
from sampler_conformance.subjects.data_loader.runs import LoaderEpoch, LoaderResume, LoaderResumeElsewhere

from .catalogue import DATA_LOADER_BAD, DATA_LOADER_CONTRACT
from .suite_run import certify, certify_rejected

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
    certify_rejected(pytester, spec, rejection, f"--contract={rejection.under}")


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
