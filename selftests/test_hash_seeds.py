"""The same command gives the same verdict, also for a sampler whose output depends on the
process's hash seed (execution/hash_seeds.py): two runs whose controllers hash differently,
as two users' shells do, draw the same cases and show the same counterexample."""

from __future__ import annotations

import json

import pytest

from sampler_conformance.execution.hash_seeds import HASH_SEED_VARIABLE

from .suite_run import PROPERTIES, draws


def _certified(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, controller_hash_seed: int) -> dict:
    """Padding checked alone, in-process, by a pytest in a fresh interpreter of that hash seed."""
    monkeypatch.setenv(HASH_SEED_VARIABLE, str(controller_hash_seed))
    certificate = pytester.path / f"certificate-{controller_hash_seed}"
    pytest.Pytester.runpytest_subprocess(
        pytester,
        str(PROPERTIES),
        "--sampler=selftests.corpus.evidence:PadsByHash",
        "--ranks=simulated",
        "-k",
        "test_per_epoch_invariant and pads_from_head",
        f"--certificate={certificate}",
        *draws(),
        "-p",
        "no:cacheprovider",
        timeout=120,
    )
    written = json.loads(certificate.with_suffix(".json").read_text())
    (padding,) = [i for i in written["invariants"] if i["flag"] == "pads_from_head"]
    return padding


def test_two_shells_hashing_differently_get_the_same_verdict(pytester, monkeypatch):
    first, second = (_certified(pytester, monkeypatch, seed) for seed in (1, 2))
    assert first["status"] == second["status"] == "failed", (first, second)
    assert first["examples"] == second["examples"], (first["examples"], second["examples"])
    assert [c["message"] for c in first["counterexamples"]] == [c["message"] for c in second["counterexamples"]]
