"""The built wheel, installed into a fresh virtual environment, works from an empty directory.

A user gets the package, not this repository: so the wheel is built from the tree, installed
with its dependencies into a new venv (no access to the clone), and each entry point runs
there from an empty directory:

- the plugin: ``pytest --pyargs sampler_conformance --sampler=SPEC``;
- the console script: ``sampler-conformance SPEC``;
- the API: ``check_sampler`` in a script, ``parametrize_with_checks`` in a user's test file
  (``examples/test_my_sampler.py``);
- torchrun: ``torchrun --standalone --nproc-per-node=2 -m sampler_conformance.torchrun SPEC``;

and each gives the verdict that the clone gives for the same sampler and options. The
plugin stays inert in a user's own suite. The sampler under test is a copy of the corpus,
importable by name, as a user's package would be.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from sampler_conformance.report.results import ONLY_IN_GROUPS
from sampler_conformance.subjects import GROUP_ONLY, contract_named

from .installed_venv import RUN_TIMEOUT_S, succeeded
from .suite_run import RANK_TIMEOUT_S, REPO, certify, draws

# Deterministic (a multi-process-only bug like HashSeededShuffle is caught on different
# invariants from run to run, with each process's hash seed), and caught in-process and in
# groups alike: so every entry point must give exactly the clone's statuses.
SPEC = "corpus.known_bad:PadsFromTail"
# The entry points are compared here, not the suite: one invariant that fails and one that
# holds, each judged in-process and in groups, take 6 s a run where the whole suite takes 19.
# The whole suite runs from the wheel in test_parametrize_with_checks_in_a_users_test_file.
OPTIONS = (
    *draws(),
    "--world-sizes=2",
    f"--rank-timeout={RANK_TIMEOUT_S}",
    "-k",
    "pads_from_head or covers",
)
# What must not be importable from site-packages: the repository's folders by their own names.
REPOSITORY_NAMES = ("harness", "adapters", "properties", "conformance", "selftests")


def _statuses(certificate: Path) -> dict[str, str]:
    written = json.loads(certificate.with_suffix(".json").read_text())
    return {entry["flag"]: entry["status"] for entry in written["invariants"]}


def test_the_wheel_installs_one_top_level_package(venv):
    found = venv.run(
        venv.python,
        "-c",
        f"import importlib.util as u, sys; print([n for n in {REPOSITORY_NAMES!r} if u.find_spec(n)])",
        env={"PYTHONPATH": ""},
    )
    succeeded(found)
    assert found.stdout.strip() == "[]", found.stdout
    located = venv.run(venv.python, "-c", "import sampler_conformance as s; print(s.__file__)")
    assert "site-packages" in located.stdout, located.stdout


def test_every_entry_point_gives_the_clones_verdict(venv, pytester):
    clone = certify(pytester, f"selftests.{SPEC}", *OPTIONS, ranks="all")
    assert clone.exit_code == 1 and clone.failed_invariants, clone.explain()

    through_plugin = venv.run(
        venv.python,
        "-m",
        "pytest",
        "--pyargs",
        "sampler_conformance",
        f"--sampler={SPEC}",
        *OPTIONS,
        f"--certificate={venv.empty / 'plugin'}",
        "-p",
        "no:cacheprovider",
    )
    through_script = _console_script(venv, SPEC, *OPTIONS, f"--certificate={venv.empty / 'script'}")
    through_api = venv.run(
        venv.python,
        "-c",
        "import json, sys; from sampler_conformance import check_sampler; "
        f"report = check_sampler({SPEC!r}, args={list(OPTIONS)!r}); "
        "print(json.dumps([report.exit_code, {f: i.status for f, i in report.invariants.items()}]))",
    )
    for run in (through_plugin, through_script):
        assert run.returncode == clone.exit_code, run.stdout[-3000:] + run.stderr[-3000:]
        assert f"VERDICT: {SPEC} does NOT conform" in run.stdout, run.stdout[-3000:]
    succeeded(through_api)
    api_exit, api_statuses = json.loads(through_api.stdout.strip().splitlines()[-1])
    assert api_exit == clone.exit_code
    assert _statuses(venv.empty / "plugin") == clone.statuses
    assert _statuses(venv.empty / "script") == clone.statuses
    assert api_statuses == clone.statuses


def test_torchrun_gives_the_clones_verdict(venv, pytester):
    """torchrun's world size is the groups' (2, as --world-sizes=2 in the clone's run)."""
    clone = certify(pytester, f"selftests.{SPEC}", *OPTIONS, ranks="all")
    in_groups = [o for o in OPTIONS if not o.startswith("--world-sizes")]
    run = venv.run(
        str(venv.root / "bin" / "torchrun"),
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "sampler_conformance.torchrun",
        SPEC,
        *in_groups,
        f"--certificate={venv.empty / 'torchrun'}",
        "-p",
        "no:cacheprovider",
    )
    output = run.stdout + run.stderr
    assert run.returncode == clone.exit_code, output[-5000:]
    assert _statuses(venv.empty / "torchrun") == clone.statuses
    for rank in (0, 1):  # every rank exits with the verdict's code
        assert re.search(rf"torchrun: rank {rank} on \S+ exits with {clone.exit_code}$", output, re.M), output[-5000:]


def test_parametrize_with_checks_in_a_users_test_file(venv):
    """The example file: torch's sampler passes every check; the tail-padded one xfails
    exactly the two it declares, and nothing else. On simulated ranks (the API in real groups
    is test_a_group_only_sampler_through_the_api's): the checks of what only real groups
    judge skip, saying so, and no other."""
    shutil.copy(REPO / "examples" / "test_my_sampler.py", venv.empty / "test_my_sampler.py")
    run = venv.run(
        venv.python,
        "-m",
        "pytest",
        "test_my_sampler.py",
        "-p",
        "no:cacheprovider",
        "-rxs",
        "-v",
        env={"CONFORMANCE_RANKS": "simulated"},
        timeout=2 * RUN_TIMEOUT_S,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert "test_torch_distributed_sampler[DistributedSampler-pads_from_head] PASSED" in output, output[-5000:]
    xfailed = sorted(line.split("[")[1].split("]")[0] for line in output.splitlines() if " XFAIL" in line)
    assert xfailed == ["TailPaddedSampler-pads_from_head", "TailPaddedSampler-strided"], output[-5000:]
    assert "FAILED" not in output, output[-5000:]
    skipped = {m[1] for m in re.finditer(r"^test_my_sampler\.py::\w+\[\w+-(\w+)\] SKIPPED", output, re.M)}
    group_only = {flag for flag in GROUP_ONLY if contract_named("torch").promises(flag)}
    assert skipped == group_only, output[-5000:]
    reasons = re.findall(r"^SKIPPED \[1\] test_my_sampler\.py:\d+: (\w+) .*: not run +(.*)$", output, re.M)
    assert sorted(reasons) == sorted((flag, ONLY_IN_GROUPS) for flag in group_only for _ in "ab"), output[-5000:]


def test_the_plugin_is_inert_in_a_users_own_suite(venv, tmp_path):
    """Installed, it adds no option (a user's --sampler and --backend do not clash), no
    header, no summary and no test."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--sampler', default='mine')\n"
        "    parser.addoption('--backend', default='mine')\n"
    )
    (project / "test_mine.py").write_text(
        "def test_mine(pytestconfig):\n    assert pytestconfig.getoption('sampler') == 'theirs'\n"
    )
    run = venv.run(venv.python, "-m", "pytest", "-v", "--sampler=theirs", "-p", "no:cacheprovider", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout and "sampler conformance" not in run.stdout, run.stdout
    assert "sampler:" not in run.stdout and "contract:" not in run.stdout, run.stdout
    plugins = venv.run(
        venv.python, "-m", "pytest", "--trace-config", "--co", "-q", "-p", "no:cacheprovider", cwd=project
    )
    assert "sampler_conformance.activation" in plugins.stdout, plugins.stdout  # loaded, yet inert
    assert "sampler_conformance/plugin.py" not in plugins.stdout, plugins.stdout


GROUP_ONLY_TESTS = """
from torch.utils.data import DistributedSampler

from sampler_conformance import check_sampler, parametrize_with_checks

ARGS = ["-k", "per_epoch_invariant", "--ranks=groups", "--world-sizes=2", "--hypothesis-profile=quick", "--hypothesis-seed=0"]


def from_group(dataset, shuffle=True, seed=0, drop_last=False):
    # Takes num_replicas/rank from the process group, as mmengine's DefaultSampler does.
    return DistributedSampler(dataset, shuffle=shuffle, seed=seed, drop_last=drop_last)


from_group.needs_process_group = True


@parametrize_with_checks(from_group, args=ARGS)
def test_group_only(check):
    check()


def test_the_report_says_where_it_ran():
    report = check_sampler(from_group, args=ARGS)
    assert report.exit_code == 0 and report.certificate["verdict"]["state"] == "partial", report.verdict
    assert report.invariants["covers"].status == "held", report.invariants["covers"].explain()
    assert report.invariants["seed_effective"].status == "not run", report.invariants["seed_effective"].explain()
"""


def test_a_group_only_sampler_through_the_api(venv):
    """A sampler that takes its rank from the process group is certified in real groups
    through both API functions: the checks of the invariants that ran there pass, the
    others skip with the reason, and the report says so."""
    (venv.empty / "test_group_only.py").write_text(GROUP_ONLY_TESTS)
    run = venv.run(venv.python, "-m", "pytest", "test_group_only.py", "-p", "no:cacheprovider", "-v", "-rs")
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert "test_group_only[from_group-covers] PASSED" in output, output[-5000:]
    assert "test_the_report_says_where_it_ran PASSED" in output, output[-5000:]
    assert re.search(r"SKIPPED .*seed_effective .*: not run", output), output[-5000:]


ALWAYS_DROPS_THE_TAIL = '''
from torch.utils.data import DistributedSampler


def shard_sampler(dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
    """Always drops the tail, by design: drop_last=True whatever it is told."""
    return DistributedSampler(dataset, num_replicas, rank, shuffle=shuffle, seed=seed, drop_last=True)
'''


def test_turning_off_what_a_sampler_breaks_by_design_leaves_nothing_to_fail(venv):
    """A sampler that always drops the tail, certified with the invariants that forbids turned
    off, as a user typed it: PARTIAL, exit 0, no FAILED line. Before, the seed 001
    experiment's batch sizes charged equal_length anyway, and the run exited 1."""
    (venv.empty / "factories.py").write_text(ALWAYS_DROPS_THE_TAIL)
    run = _console_script(venv, "factories.py:shard_sampler", "--without=covers,equal_length", "-rs", *draws())
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert "PARTIAL: no failure" in run.stdout and "turned off: " in run.stdout, output[-3000:]
    assert not re.search(r"^FAILED ", run.stdout, re.M), output[-5000:]
    _assert_unpromised_tests_deselected_and_counted(run.stdout)


def test_a_sampler_that_always_drops_the_tail_conforms_to_truncated(venv):
    """The same design, certified as what it is: --contract=truncated, exit 0, "conforms",
    a state the documented gate accepts (with --without it can only be PARTIAL)."""
    (venv.empty / "factories.py").write_text(ALWAYS_DROPS_THE_TAIL)
    run = _console_script(venv, "factories.py:shard_sampler", "--contract=truncated", *draws())
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert "VERDICT: factories.py:shard_sampler conforms to contract 'truncated'" in run.stdout, output[-3000:]


def _assert_unpromised_tests_deselected_and_counted(output: str) -> None:
    """The tests of invariants the contract does not promise, or that --without turned off,
    are deselected, not skipped, and the summary's one ``deselected:`` line accounts for
    pytest's count; before, they were 191 skipped tests of 354 and "133 deselected", unexplained."""
    explained = re.findall(r"^deselected: (.*)$", output, re.M)
    assert len(explained) == 1, output[-5000:]
    counted = sum(int(n) for n in re.findall(r"(\d+) tests? of", explained[0]))
    assert re.search(rf"\b{counted} deselected\b", output), output[-3000:]
    skipped = re.findall(r"^SKIPPED .*", output, re.M)
    assert not [line for line in skipped if "promise" in line or "turned off" in line], skipped


def test_a_test_id_pasted_from_the_output_runs_that_test(venv):
    """The progress and FAILED lines name a test by its file alone (the folders lie in
    site-packages): pasted back after the spec, it runs that test, where it was "file or
    directory not found", and the verdict says that it was a rerun, not a certification."""
    run = _console_script(
        venv, "torch.utils.data:DistributedSampler", "test_lengths.py::test_equal_batch_counts[keep_last]"
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0 and re.search(r"\b1 passed\b", run.stdout), output[-3000:]
    assert "PARTIAL: a rerun of test_lengths.py::test_equal_batch_counts[keep_last], not a certification" in run.stdout


def _console_script(venv, *arguments: str):
    """``sampler-conformance *arguments`` as installed, in the empty directory, without pytest's cache."""
    return venv.run(str(venv.root / "bin" / "sampler-conformance"), *arguments, "-p", "no:cacheprovider")
