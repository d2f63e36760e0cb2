"""Every known-bad sampler, run through the whole in-process suite (properties/), fails
exactly the invariants the catalogue says: the one its bug targets, plus those the bug
genuinely implies, each with its reason (selftests/catalogue.py). A few implied ones show
only on cases the random draws may miss; those may fail, and need not. An invariant
charged beyond that set is a wrong verdict of the suite."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from sampler_conformance.execution.scripts import run_scripts
from sampler_conformance.report.reproductions import SUITE_BUG, _why_not_offered, reproduce
from sampler_conformance.report.results import FAILED, InvariantResult
from sampler_conformance.subjects import GROUP_ONLY, REGISTRY, subject_of
from sampler_conformance.subjects.index_sampler.checks import PER_EPOCH
from sampler_conformance.subjects.index_sampler.contracts import TORCH
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC, load_plug

from .catalogue import KNOWN_BAD, LAZY_REFERENCE
from .reproduced import assert_reproduced
from .suite_run import certify, certify_rejected


@pytest.mark.parametrize("spec", list(KNOWN_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_known_bad_sampler_fails_exactly_its_invariants(pytester, spec):
    run = certify_rejected(pytester, spec, KNOWN_BAD[spec], "--repro=on")  # the selftests' default is off
    # What only real process groups check was not run, and the verdict says so.
    assert (
        "does NOT conform" in run.verdict
        and "not run: " + ", ".join(f for f in REGISTRY if f in GROUP_ONLY and TORCH.promises(f)) in run.verdict
    ), run.verdict
    # At the numeric edges the reference is the lazy one they derive from: torch's holds N indices a rank.
    reference = LAZY_REFERENCE if "--scale" in KNOWN_BAD[spec].options else DEFAULT_SPEC
    assert_reproduced(run, reference, flaky=PER_EPOCH.flags if spec in FLAKY else ())


# Known-bads whose failures no script reproduces twice alike, and why: the run says so instead.
FLAKY = {"selftests.corpus.known_bad:GlobalRNG": "it draws from the global RNG, which each interpreter seeds afresh"}


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


# Scripts that stand for the cases a run meets, on a record of a sampler that raised: the bug
# shown, a fix, no words, no two runs alike, another exception than the one the run saw.
RAISED_RECORD = {
    "title": "runs without crashing",
    "message": "rank 0: the sampler raised IndexError while iterating: list index out of range",
}
_WORDS = "FAILED [runs without crashing] rank 0: the sampler raised IndexError while iterating"


def _exits_1(here: str, noise: str = "") -> str:
    """A script that prints the record's words (and ``noise``), then its own finding, and exits 1."""
    return f'import random, sys\nprint("{_WORDS}"{noise})\nprint("here: {here}")\nsys.exit(1)\n'


CHECKED_SCRIPTS = {
    "shows": _exits_1("rank 0: IndexError: list index out of range"),
    "holds": 'print("held: runs without crashing")\n',
    "no_words": "import sys\nsys.exit(1)\n",
    "flaky": _exits_1("rank 0: IndexError: list index out of range", noise=", random.random()"),
    # Its own temporary folder in the sampler's message, a new one each run: alike all the same.
    "own_folder": "import tempfile\n"
    + _exits_1("rank 0: IndexError: no index.json in {tempfile.mkdtemp(prefix='layout-')}").replace(
        'print("here:', 'print(f"here:'
    ),
    "raises_another": _exits_1("rank 0: ArrowKeyError: A type extension is already defined"),
}


def test_a_script_is_offered_only_where_two_runs_exit_1_alike_with_the_violations_words(tmp_path):
    """What a run checks before it offers a script (report/reproductions.py), on real runs of
    scripts as `python SCRIPT` runs them: what assert_reproduced takes from the run's record.
    One that exits 1 on another exception than the sampler's fails for a reason of its own (a
    package registered twice in a fork of the run: ArrowKeyError, where the sampler raised
    IndexError) and is not offered. Two runs that differ only in the name of a temporary folder
    each made (litdata's "The provided dataset `/tmp/layout-t2mne2ws` doesn't contain any
    index.json file") printed alike."""
    paths = []
    for name, text in CHECKED_SCRIPTS.items():
        (tmp_path / f"{name}.py").write_text(text)
        paths.append(str(tmp_path / f"{name}.py"))
    runs = run_scripts(paths * 2)
    first = dict(zip(CHECKED_SCRIPTS, runs[: len(paths)], strict=True))
    second = dict(zip(CHECKED_SCRIPTS, runs[len(paths) :], strict=True))
    why = {name: _why_not_offered(first[name], second[name], RAISED_RECORD) for name in CHECKED_SCRIPTS}
    assert why["shows"] == "" and first["shows"].exit_code == 1, first["shows"]
    assert why["own_folder"] == "" and first["own_folder"].output != second["own_folder"].output, first["own_folder"]
    assert why["holds"].startswith("the script exits 0 on the counterexample's case"), why
    assert why["no_words"] == "the script exits 1 without the violation's words", why
    assert why["flaky"].startswith("two runs of the script printed different things"), why
    assert why["raises_another"] == (
        "the script exits 1, but not on IndexError, which the certification saw raised: "
        "rank 0: ArrowKeyError: A type extension is already defined"
    ), why


# A package that registers itself with another one's registry at import, as datasets registers
# its Arrow types with pyarrow: imported twice in one process, it raises.
REGISTERING_PACKAGE = {
    "registry_host.py": "REGISTERED = set()\n",
    "registering.py": (
        "import registry_host\n"
        "if __name__ in registry_host.REGISTERED:\n"
        "    raise KeyError(f'{__name__} is registered already')\n"
        "registry_host.REGISTERED.add(__name__)\n"
    ),
    "script.py": "import registering\nprint('held: it imports')\n",
}
# In a fresh interpreter: the package imported and forgotten, as the process that collects the
# tests checks an adapter's package (specs.require_package); then its script run both ways.
RUN_BOTH_WAYS = """
import sys
sys.path.insert(0, {folder!r})
import registering
del sys.modules["registering"]
from sampler_conformance.execution.scripts import run_scripts
for fresh in (False, True):
    (run,) = run_scripts([{script!r}], fresh_server=fresh)
    print("fresh" if fresh else "forked", run.exit_code, "registered already" in run.output)
"""


def test_a_script_is_checked_in_a_fresh_interpreter_where_the_run_forgot_a_package(tmp_path):
    """A script that imports a package the run imported and forgot: forked from the run's own
    process it fails on the package's second registration, which `python SCRIPT` never meets;
    run from a fresh interpreter's server, as the run does then, it holds (datasets' Arrow
    types: a script offered on that failure, not the sampler's, exited 0 alone)."""
    for name, text in REGISTERING_PACKAGE.items():
        (tmp_path / name).write_text(text)
    code = RUN_BOTH_WAYS.format(folder=str(tmp_path), script=str(tmp_path / "script.py"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert result.stdout.splitlines() == ["forked 1 True", "fresh 0 False"], result.stdout + result.stderr


def test_a_script_the_suite_fails_to_write_is_said_to_be_the_suites_bug(tmp_path):
    """A subject's script writer that raises (not CannotReproduce) costs that script only: the
    run says it is the suite's bug, and the verdict stands (the invariant stays failed)."""

    def broken_writer(*_):
        raise KeyError("global_seed")

    result = InvariantResult("covers", "union coverage", FAILED, counterexamples=[{"parameters": {}}])
    subject = replace(subject_of(TORCH), reproduce=broken_writer)
    found = reproduce([result], subject, load_plug(DEFAULT_SPEC), TORCH, tmp_path)
    assert found["covers"].script is None and found["covers"].why_not.startswith(SUITE_BUG), found
    assert "KeyError: 'global_seed'" in found["covers"].why_not and result.status == FAILED
