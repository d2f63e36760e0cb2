"""Every known-bad sampler, run through the whole in-process suite (properties/), fails
exactly the invariants the catalogue says: the one its bug targets, plus those the bug
genuinely implies, each with its reason (selftests/catalogue.py). A few implied ones show
only on cases the random draws may miss; those may fail, and need not. An invariant
charged beyond that set is a wrong verdict of the suite."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

import pytest

from sampler_conformance.subjects import GROUP_ONLY, REGISTRY
from sampler_conformance.subjects.index_sampler.checks import PER_EPOCH
from sampler_conformance.subjects.index_sampler.contracts import TORCH
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC
from sampler_conformance.subjects.index_sampler.repro import LARGEST_READ
from sampler_conformance.subjects.index_sampler.repro_snippets import SNIPPETS

from .catalogue import KNOWN_BAD
from .suite_run import SuiteRun, certify, certify_rejected


@pytest.mark.parametrize("spec", list(KNOWN_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_known_bad_sampler_fails_exactly_its_invariants(pytester, spec):
    run = certify_rejected(pytester, spec, KNOWN_BAD[spec], "--repro=on")  # the selftests' default is off
    # What only real process groups check was not run, and the verdict says so.
    assert (
        "does NOT conform" in run.verdict
        and "not run: " + ", ".join(f for f in REGISTRY if f in GROUP_ONLY and TORCH.promises(f)) in run.verdict
    ), run.verdict
    assert_reproduced(run, flaky=spec in FLAKY)


# Known-bads whose failures no script reproduces twice alike, and why: the run says so instead.
FLAKY = {"selftests.corpus.known_bad:GlobalRNG": "it draws from the global RNG, which each interpreter seeds afresh"}


def assert_reproduced(run: SuiteRun, flaky: bool) -> None:
    """Each failed invariant a script is written for (``repro_snippets.SNIPPETS``) has one,
    checked by the run before it named it on the summary, that reproduces it without the suite:
    run here, in this interpreter, it exits 1 with the violation's words, and 0 against torch's
    DistributedSampler. A ``flaky`` sampler's per-epoch ones (its deterministic script seeds the
    global RNGs as the test did) and a numeric edge's are not offered, and the summary says why."""
    failed = [i for i in run.written["invariants"] if i["status"] == "failed" and i["flag"] in SNIPPETS]
    for invariant in failed:
        reproduction = invariant["reproduction"]
        if all(c["parameters"]["dataset_size"] > LARGEST_READ for c in invariant["counterexamples"]):
            assert "numeric edge" in reproduction["why_not"] and "no reproduction script: N=" in run.summary
            continue
        if flaky and invariant["flag"] in PER_EPOCH:
            why = reproduction["why_not"]
            assert not reproduction["script"] and ("flaky" in why or "not deterministic" in why), reproduction
            assert f"no reproduction script: {why}" in run.summary, run.summary
            continue
        assert reproduction["script"], f"{invariant['flag']}: {reproduction['why_not']}"
        script = Path(reproduction["script"])
        assert f"reproduce without the suite: python {script.parent.name}/{script.name}" in run.summary, run.summary
        code, output = run_script(reproduction["script"])
        # Its values may differ from the run's where the sampler reads the global RNG (GlobalRNG), whose
        # state here is not a fresh interpreter's: the bug shows all the same.
        # The violation's words: the invariant's title, or a fault's ("[sampler fault]").
        assert code == 1 and f"[{invariant['counterexamples'][0]['title']}]" in output, output
        code, output = run_script(reproduction["script"], DEFAULT_SPEC)
        assert code == 0 and "held: " in output, output


def run_script(path: str, *argv: str) -> tuple[object, str]:
    """``python path argv`` run in this interpreter (torch imported already): its exit code and
    what it printed."""
    printed = io.StringIO()
    saved = sys.argv, list(sys.path)
    sys.argv = [path, *argv]
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(path, run_name="__main__")
        code: object = 0
    except SystemExit as stop:
        code = stop.code
    finally:
        sys.argv, sys.path[:] = saved
    return code, printed.getvalue()


def test_a_counterexample_is_shrunk_to_the_smallest_case_under_dev(pytester):
    """The selftests' own profile shows the first failure it draws; dev, a user's default,
    shrinks it: padding taken from the tail first differs from the head's at N=3 on 2 ranks."""
    run = certify(pytester, "selftests.corpus.known_bad:PadsFromTail", "-k", "pads_from_head", profile="dev")
    (first, *_) = run.counterexamples("pads_from_head")
    assert first["case"].startswith("N=3, W=2, shuffle=False,"), first
    drawn = certify(pytester, "selftests.corpus.known_bad:PadsFromTail", "-k", "pads_from_head")
    assert not drawn.counterexamples("pads_from_head")[0]["case"].startswith("N=3, W=2,"), (
        "the selftests' profile shrank"
    )
