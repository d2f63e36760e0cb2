"""A deviation declared on the command line is certified as what it is (issue 53, item 6).

- ``--expect-failure=FLAG:REASON``: the invariant is judged as the others; its failure is a
  strict xfail, pytest's own ``x``, and the verdict "conforms as declared" exits 0, recorded
  in the certificate; one that holds fails the run ("misdeclared"), so the declaration goes.
- ``--contract=truncated``: a sampler that always drops the tail (no drop_last, or one it
  ignores) conforms, where ``torch``'s padding promises reject it; torch's own sampler,
  which pads when told to keep the tail, does not.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from sampler_conformance.report.certificate import SCHEMA_PATH

from .suite_run import certify

KNOWN_BAD = "selftests.corpus.known_bad"
# Promises whose invariants all run in-process, so a simulated run judges every one of them.
IN_PROCESS_CONTRACT = "--contract=valid,padded_epochs,strided"
PADS_FROM_TAIL = ("pads_from_head:we pad from the tail, see #12", "strided:our order is another, see #13")


def test_a_declared_failure_is_an_xfail_and_the_run_conforms_as_declared(pytester):
    """PadsFromTail breaks pads_from_head and strided; declared, they are xfailed, nothing
    reads FAILED, and the verdict gives their reasons. Before, the option did not exist
    (exit 4) and --without made the run PARTIAL, which the documented gate rejects."""
    run = certify(
        pytester,
        f"{KNOWN_BAD}:PadsFromTail",
        IN_PROCESS_CONTRACT,
        *(f"--expect-failure={declared}" for declared in PADS_FROM_TAIL),
        "-rx",
    )
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    jsonschema.validate(run.written, json.loads(SCHEMA_PATH.read_text()))
    assert run.written["verdict"]["state"] == "conforms as declared", run.verdict
    assert run.statuses["pads_from_head"] == run.statuses["strided"] == "xfailed", run.statuses
    assert {s for flag, s in run.statuses.items() if flag not in ("pads_from_head", "strided")} <= {
        "held",
        "not promised",
    }, run.statuses
    assert run.written["contract"]["expected_failures"] == dict(d.split(":", 1) for d in PADS_FROM_TAIL)
    assert "failed as declared: pads_from_head (we pad from the tail, see #12)" in run.verdict, run.verdict
    assert not run.failed_test_ids, run.explain()
    assert "XFAIL " in run.output and "declared with --expect-failure: pads_from_head" in run.output, run.explain()


def test_an_invariant_declared_broken_that_holds_fails_the_run(pytester):
    """A strict xfail: torch's sampler is strided, so declaring strided broken is wrong."""
    run = certify(
        pytester, "torch.utils.data:DistributedSampler", IN_PROCESS_CONTRACT, "--expect-failure=strided:we thought so"
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert run.written["verdict"]["state"] == "misdeclared", run.verdict
    assert run.statuses["strided"] == "xpassed", run.statuses
    assert "strided held, which --expect-failure declared broken; remove the declaration" in run.verdict


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        ("strided", "give the invariant and why it fails on purpose, FLAG:REASON"),
        ("stridde:typo", "unknown invariant 'stridde'"),
        ("balanced:not ours", "balanced: not invariant(s) contract 'torch' promises"),
    ],
    ids=["no reason", "unknown", "not promised"],
)
def test_a_bad_declaration_is_a_usage_error(pytester, declared, said):
    result = pytester.runpytest_subprocess(
        "-p", "sampler_conformance.plugin", f"--expect-failure={declared}", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert said in result.stderr.str(), result.stderr.str()


def test_torch_s_sampler_does_not_always_drop_the_tail(pytester):
    """Under truncated, torch's DistributedSampler pads when told to keep the tail: unequal
    to floor(N/W), and its padding repeats indices."""
    run = certify(pytester, "torch.utils.data:DistributedSampler", "--contract=truncated", "-k", "per_epoch")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert run.failed_invariants == {"equal_length", "disjoint"}, run.explain()
    assert "floor(N/W): the contract drops the tail whatever drop_last says" in run.summary, run.explain()
