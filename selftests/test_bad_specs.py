"""A bad --sampler spec is a usage error: exit code 4, one message, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .corpus.faulty import IMPORT_ERROR
from .suite_run import certify

# spec -> a fragment the one-line message must contain (beside the spec itself)
BAD_SPECS = {
    "no-colon-here": "is not of the form MODULE:ATTR",
    "selftests.corpus:": "is not of the form MODULE:ATTR",
    "selftests.corpus.no_such_module:Sampler": "no module named 'selftests.corpus.no_such_module'",
    "selftests/corpus/no_such_file.py:Sampler": "does not exist",
    "selftests.corpus.known_bad:NoSuchSampler": "has no attribute 'NoSuchSampler'",
    "selftests.corpus.faulty:NOT_A_SAMPLER": "not a class or function",
    "selftests.corpus.broken_import:Sampler": f"RuntimeError: {IMPORT_ERROR}",
    "selftests.corpus.faulty:RankFromEnvironment": "num_replicas, rank",
    "selftests.corpus.faulty:requires_its_rank": "num_replicas and rank have no default",
}


@pytest.mark.parametrize("spec", list(BAD_SPECS))
def test_bad_spec_is_a_usage_error(pytester, spec):
    run = certify(pytester, spec, timeout=60)
    assert run.exit_code == pytest.ExitCode.USAGE_ERROR, run.explain()
    messages = [line for line in run.output.splitlines() if line.startswith("ERROR: ")]
    assert len(messages) == 1, run.explain()
    assert f"--sampler={spec!r}" in messages[0] and BAD_SPECS[spec] in messages[0], messages[0]
    assert "Traceback" not in run.output and 'File "' not in run.output, run.explain()
    assert "VERDICT" not in run.output and "passed" not in run.output, "nothing may run with a bad spec"


def test_a_file_spec_imports_its_neighbours(pytester):
    """``factories.py`` does ``from my_samplers import ...`` beside it, as ``python
    factories.py`` lets it: its folder is on the path wherever the file is loaded, in the
    controller and in every rank's process."""
    folder = pytester.path / "project"
    folder.mkdir()
    (folder / "my_samplers.py").write_text(
        "from torch.utils.data import DistributedSampler\n\n\nclass MySampler(DistributedSampler):\n    pass\n"
    )
    (folder / "factories.py").write_text("from my_samplers import MySampler\n")
    run = certify(pytester, "project/factories.py:MySampler", "--world-sizes=2", "-k", "covers", ranks="all")
    assert run.statuses["covers"] == "held", run.explain()


def test_a_misspelt_option_is_answered_with_the_one_meant(tmp_path):
    """``sampler-conformance SPEC --world-size=2 --contrct=torch`` as typed: pytest's usage
    error, then what each was probably meant to be (before: the usage error alone)."""
    run = subprocess.run(
        [sys.executable, "-m", "sampler_conformance.cli", "torch.utils.data:DistributedSampler", "--world-size=2"]
        + ["--contrct=torch", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert "--world-size is not an option; did you mean --world-sizes?" in run.stderr, run.stderr
    assert "--contrct is not an option; did you mean --contract?" in run.stderr, run.stderr
