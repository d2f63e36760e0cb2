"""The data loader subject: its reference conforms to data_loader+elastic, and each known-bad
loader of selftests/corpus/loader_bad.py fails exactly the invariants its bug breaks. Each is
one certification on simulated ranks under the selftest profile (about 3 s)."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
import torch

from sampler_conformance.report.certificate import SCHEMA_PATH
from sampler_conformance.subjects import contract_named
from sampler_conformance.subjects.common.reading import BadIndex
from sampler_conformance.subjects.data_loader.plug import batch_ids

from .catalogue import DATA_LOADER_BAD, DATA_LOADER_CONTRACT
from .suite_run import certify, certify_rejected

ELASTIC = f"{DATA_LOADER_CONTRACT}+elastic"


def test_the_reference_holds_every_invariant_of_data_loader_elastic(pytester):
    """Certified with no spec: the contract's reference, a DataLoader over a
    DistributedSampler, both with drop_last, keeps the world-size promise too."""
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
