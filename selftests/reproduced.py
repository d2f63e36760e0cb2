"""Asserting a failed certification's reproduction scripts (docs/reproductions.md): each failed
invariant its subject writes scripts for has one, which the run checked before it offered it
(it exited 1 with the violation's words); run here, in this interpreter, against the
contract's reference, it exits 0; its issue body holds the script and its output."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from collections.abc import Collection
from pathlib import Path

import torch

from sampler_conformance.subjects import contract_named, subject_of
from sampler_conformance.subjects.common.repro_script import LARGEST_READ  # past it, a numeric edge

from .suite_run import SuiteRun


def assert_reproduced(
    run: SuiteRun,
    reference: str,
    flaky: Collection[str] = (),
    read_in_groups: Collection[str] = (),
) -> None:
    """Each failed invariant the subject writes scripts for under the run's contract
    (``Subject.scripted``) is reproduced, but those of ``flaky`` (a sampler that draws from a
    global RNG: no two runs of its script print alike) and a numeric edge's, which are not
    offered, the summary saying why.
    One found in real groups only is reproduced too where ``read_in_groups`` holds its flag (the
    subject's scripts read it in a gloo group of W processes); elsewhere the run says why not."""
    contract = contract_named(run.written["contract"]["name"])
    subject = subject_of(contract)
    covered = subject.scripted(contract)
    failed = [i for i in run.written["invariants"] if i["status"] == "failed" and i["flag"] in covered]
    for invariant in failed:
        reproduction = invariant["reproduction"]
        # At a numeric edge a script is written for the invariants the subject's scripts read there
        # (an index sampler's on the few ranks the suite read), and for none of the rest (a measured
        # cost's script measures it again).
        if (
            not reproduction["script"]
            and all(c["parameters"]["dataset_size"] > LARGEST_READ for c in invariant["counterexamples"])
            and invariant["flag"] not in subject.scripted_at_the_edge(contract)
        ):
            assert "numeric edge" in reproduction["why_not"] and "no reproduction script: N=" in run.summary
            continue
        if (
            not reproduction["script"]
            and all(c.get("in_groups") for c in invariant["counterexamples"])
            and invariant["flag"] not in read_in_groups
        ):
            # Found in real groups only, by a subject whose scripts read the ranks in one process
            # (a plan each process makes its own may not show there): the run says why it offers none.
            why = reproduction["why_not"]
            assert "process groups" in why or "fails only in the suite's own processes" in why, reproduction
            continue
        if invariant["flag"] in flaky:
            why = reproduction["why_not"]
            if reproduction["script"]:
                # Two runs of a flaky script print alike by chance where its output has few values
                # (GlobalRNG's covers on N=4: 1 in 24): offered then, it showed the violation.
                assert f"[{invariant['counterexamples'][0]['title']}]" in reproduction["output"], reproduction
                continue
            assert "flaky" in why or "not deterministic" in why, reproduction
            assert f"no reproduction script: {why}" in run.summary, run.summary
            continue
        assert reproduction["script"], f"{invariant['flag']}: {reproduction['why_not']}"
        script = Path(reproduction["script"])
        assert f"reproduce without the suite: python {script.parent.name}/{script.name}" in run.summary, run.summary
        # The run offered it only where two runs of it, each as `python SCRIPT` runs it, exited 1
        # and printed alike (test_known_bad.py proves that a script that exits 0 is not
        # offered): what it printed holds the violation's words, the invariant's title or a
        # fault's ("[sampler fault]"). Run here against the reference, it holds.
        assert f"[{invariant['counterexamples'][0]['title']}]" in reproduction["output"], reproduction
        code, output = run_script(reproduction["script"], reference)
        assert code == 0 and "held: " in output, output
        body = Path(reproduction["issue"]).read_text()  # ready to paste: the versions, the script, its output
        assert f"**Versions:** torch {torch.__version__}" in body and script.read_text().rstrip() in body, body
        assert reproduction["output"].rstrip() in body and "**The promise:** " in body, body


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
