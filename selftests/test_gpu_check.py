"""tools/gpu_check.py, the prepared command that certifies over NCCL on a lent GPU machine:
its dry run (the same plan, cut down with -k, over gloo) in a subprocess, and its judgement
of verdicts, whose exit status a wrong verdict must turn non-zero.

The dry run shares nothing with other selftests (its certificates go to its own tmp_path,
with no cache and no example database), so any worker may run it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from sampler_conformance.subjects import SUBJECTS, contract_named

from .catalogue import KNOWN_BAD
from .suite_run import REPO, SELFTEST_PROFILE

TOOL = REPO / "tools" / "gpu_check.py"
# The whole plan's dry run takes about 30 s on 2 idle cores (docs/process-groups.md), the runs
# here about 10; its own deadline (--time-limit) ends it first, with a summary, and this bounds
# a hang of the script itself.
DRY_RUN_TIME_LIMIT_S = 240
DRY_RUN_TIMEOUT_S = 300


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gpu_check = _load_tool()


def _rows(summary: str) -> dict[str, list[str]]:
    """summary.md's table: run name -> its cells."""
    rows = {}
    for line in summary.splitlines():
        if line.startswith("| ") and not line.startswith(("| run ", "| ---")):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows[cells[0]] = cells
    return rows


# The dry run's runs here: the plan's three kinds of expectation (a reference that conforms and
# checks NCCL, a known-bad failing in real groups too, one failing in-process only). The other
# subjects' references are the same command with another spec: their own selftests certify
# them, and their -k is checked below without a run (each run costs 3 s, most of it an interpreter).
DRY_RUN_ONLY = ("torch", "bad_shuffle_ignored", "bad_pads_from_tail")


def test_dry_run_gives_every_planned_run_its_expected_verdict(tmp_path):
    out = tmp_path / "gpu_check"
    run = subprocess.run(
        [
            sys.executable,
            str(TOOL),
            str(out),
            "--dry-run",
            f"--only={','.join(DRY_RUN_ONLY)}",
            f"--profile={SELFTEST_PROFILE}",
            f"--time-limit={DRY_RUN_TIME_LIMIT_S}",
        ],
        capture_output=True,
        text=True,
        timeout=DRY_RUN_TIMEOUT_S,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    summary = (out / "summary.md").read_text()
    rows = _rows(summary)
    plan = [planned for planned in gpu_check.PLAN if planned.name in DRY_RUN_ONLY]
    assert list(rows) == [planned.name for planned in plan], summary
    for planned in plan:
        expect = gpu_check.expected(planned, "gloo", dry=True)
        name, spec, contract, _backend, described, state, exit_code, _seconds, as_expected = rows[planned.name]
        assert (spec, contract) == (f"`{planned.spec}`", planned.contract), summary
        assert (described, state, exit_code) == (expect.describe(), expect.state, str(expect.exit_code)), summary
        assert as_expected == "yes", summary
        assert (out / f"{name}.json").exists() and (out / f"{name}.log").exists(), name
    assert f"ALL {len(plan)} RUNS AS EXPECTED" in summary, summary
    assert summary in output  # printed too
    if not torch.cuda.is_available():  # the NCCL test's skip is recorded with its reason
        assert "not run: equal_batches: test_batch_counts_all_reduced_over_nccl[W1]: needs 1 CUDA device" in summary


def test_each_planned_dry_run_selects_invariants_of_its_contract():
    """A dry run's -k names invariants its contract promises (or the NCCL test): a -k that
    selected nothing would end a run with no test run."""
    for planned in gpu_check.PLAN:
        words = set(planned.dry_k.split(" or "))
        assert words - {"nccl"} <= contract_named(planned.contract).flags, planned


def test_the_dry_run_derives_its_expectations_from_the_plans():
    """Declared once: a reference conforms (PARTIAL under the dry run's -k), a known-bad does
    not conform in either; test_nccl is required over NCCL only."""
    for planned in gpu_check.PLAN:
        full, dry = gpu_check.expected(planned, "nccl", dry=False), gpu_check.expected(planned, "gloo", dry=True)
        if planned.expect.state == gpu_check.CONFORMS:
            assert (full.state, dry.state, dry.exit_code) == (gpu_check.CONFORMS, gpu_check.PARTIAL, 0)
        else:
            assert full.state == dry.state == gpu_check.DOES_NOT_CONFORM and dry.exit_code == 1
        assert not dry.nccl_test
        assert full.nccl_test == (planned.expect.nccl_test and planned.backend is None)
    assert gpu_check.expected(gpu_check.PLAN[0], "nccl", dry=False).nccl_test


def test_the_plan_certifies_each_subjects_reference_and_catalogued_known_bads():
    references = [p for p in gpu_check.PLAN if p.expect.state == gpu_check.CONFORMS]
    for planned in references:
        contract = contract_named(planned.contract)
        assert planned.spec == (contract.reference or SUBJECTS[contract.subject].default_spec), planned
    assert {contract_named(p.contract).subject for p in references} == set(SUBJECTS)
    bad = [p for p in gpu_check.PLAN if p.expect.state == gpu_check.DOES_NOT_CONFORM]
    assert len(bad) == 2
    for planned in bad:
        assert planned.spec in KNOWN_BAD and KNOWN_BAD[planned.spec].flag in planned.expect.failed, planned


def _outcome(state: str, exit_code: int, **fields) -> Any:
    return gpu_check.Outcome(exit_code, 1.0, verdict=f"{state.upper()}: ...", state=state, **fields)


def test_judge_names_each_way_a_verdict_differs_from_the_expected_one():
    bad = gpu_check.Expect(gpu_check.DOES_NOT_CONFORM, 1, frozenset({"pads_from_head"}), fails_in_groups=True)
    failed = frozenset({"pads_from_head"})
    assert gpu_check.judge(bad, _outcome(gpu_check.DOES_NOT_CONFORM, 1, failed=failed, failed_in_groups=True)) == []
    assert gpu_check.judge(bad, _outcome(gpu_check.CONFORMS, 0)) == [
        "state 'conforms', expected 'does not conform'",
        "exit 0, expected 1",
        "did not fail pads_from_head",
        "no test in real process groups failed",
    ]
    nccl = gpu_check.Expect(gpu_check.CONFORMS, 0, nccl_test=True)
    assert gpu_check.judge(nccl, _outcome(gpu_check.CONFORMS, 0)) == [f"{gpu_check.NCCL_TEST} did not run"]
    timed_out = gpu_check.Outcome(None, 60.0, note="timed out after 60 s: killed with its process group")
    assert gpu_check.judge(nccl, timed_out)[0] == timed_out.note


@pytest.mark.parametrize(("state", "exit_code", "status"), [("partial", 0, 1), ("conforms", 0, 0)])
def test_a_verdict_other_than_the_expected_one_makes_the_command_exit_non_zero(
    monkeypatch, tmp_path, state, exit_code, status
):
    """main() end to end, each run replaced by one that writes a certificate of ``state``:
    over gloo, the weighted reference must conform, so a PARTIAL one fails the check."""

    def fake_run(argv, log: Path, timeout_s, env):
        certificate = Path(next(a for a in argv if a.startswith("--certificate=")).partition("=")[2] + ".json")
        written = {"verdict": {"state": state}, "invariants": [], "run": {"backend": "gloo (gloo)"}}
        certificate.write_text(json.dumps(written))
        log.write_text(f"{'VERDICT' if state == 'conforms' else 'PARTIAL'}: the weighted reference ...\n")
        return exit_code, 0.1, ""

    monkeypatch.setattr(gpu_check, "run_one", fake_run)
    monkeypatch.setattr(gpu_check, "ensure_suite", lambda env, scratch: "sampler_conformance: importable already")
    assert gpu_check.main([str(tmp_path), "--backend=gloo", "--only=weighted"]) == status
    summary = (tmp_path / "summary.md").read_text()
    assert ("1 OF 1 RUNS NOT AS EXPECTED" in summary) == bool(status), summary
