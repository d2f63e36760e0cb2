"""Run the certification suite in a subprocess and read what it printed.

The subprocess is the user's view: exit code, failure sections, the short summary and
the plugin's "sampler conformance" section. Nothing here imports the sampler under test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sampler_conformance.core.invariants import REGISTRY, Where
from sampler_conformance.pytest_plugin.profiles import PROFILES, SELFTEST

from .catalogue import title_of

if TYPE_CHECKING:
    from .corpus.rejections import Rejection

REPO = Path(__file__).resolve().parent.parent
PROPERTIES = REPO / "properties"
CONFORMANCE = REPO / "conformance"
WHOLE_SUITE = (PROPERTIES, CONFORMANCE)  # a certification as a user runs it: in-process and in real groups
# Whole-suite selftests certify under the selftest profile (quick at half its examples: 5 a
# property, held on 4 judged cases, one through loader workers, failures not shrunk, since
# shrinking a failure in real groups re-runs it through fresh loader workers): the known-bads
# are caught on the same fixed draws, each one's exact failed set asserted; the selftests took
# 532 s where quick's 10 examples took 693 s. The verdict table and the docs' figures use dev;
# test_known_bad proves dev shrinks. A proof that needs more draws names its profile
# (corpus.rejections.Rejection.profile, or certify's profile=), and says why.
SELFTEST_PROFILE = SELFTEST
SELFTEST_EXAMPLES = PROFILES[SELFTEST_PROFILE]["max_examples"]
# One certification under the dev profile takes 3-25 s on 2 busy cores; a run that
# takes this long is a hang, and the selftest fails instead of waiting forever.
RUN_TIMEOUT_S = 240
# The same draws on every run: a selftest that asserts a sampler's exact failed invariants
# must not depend on which cases a random seed happens to reach.
HYPOTHESIS_SEED = 0
# Each call into one rank's sampler is bounded by this (the plugin's --rank-timeout).
RANK_TIMEOUT_S = 20


def draws(profile: str = SELFTEST_PROFILE) -> tuple[str, str]:
    """The options that fix a selftest certification's draws: ``profile`` and the seed."""
    return f"--hypothesis-profile={profile}", f"--hypothesis-seed={HYPOTHESIS_SEED}"


# "FAILED [flag, ...] path::test[...]": a failed certification test names what it is charged to.
_FAILED = re.compile(r"^FAILED(?: \[[^\]]*\])? \S+?::(\S+)", re.MULTILINE)
# "____ test_name[params] ____" opens one test's failure section.
_SECTION = re.compile(r"^_{3,} (\w+)(\[[^\]]*\])? _{3,}$", re.MULTILINE)
_BANNER = re.compile(r"^(={3,}|_{3,}) ", re.MULTILINE)
_SKIPPED = re.compile(r"^SKIPPED \[\d+\] \S+: (.+)$", re.MULTILINE)
_SUMMARY = re.compile(r"^=+ sampler conformance =+$(.*?)(?=^=+ |\Z)", re.MULTILINE | re.DOTALL)
VERDICT_PREFIXES = ("VERDICT: ", "PARTIAL: ", "INTERRUPTED: ", "ERROR: ", "NO VERDICT: ")
_CASE = re.compile(r"case: N=(\d+), W=(\d+)")


@dataclass(frozen=True)
class SuiteRun:
    spec: str
    exit_code: int
    output: str  # stdout then stderr
    certificate: dict | None = None  # the run's JSON certificate, when it wrote one

    @property
    def written(self) -> dict:
        """The certificate the run wrote (the test fails when it wrote none)."""
        assert self.certificate is not None, f"the run wrote no certificate\n{self.explain()}"
        return self.certificate

    @property
    def statuses(self) -> dict[str, str]:
        """Invariant flag -> status, from the certificate."""
        return {invariant["flag"]: invariant["status"] for invariant in self.written["invariants"]}

    @property
    def failed_invariants(self) -> set[str]:
        return {flag for flag, status in self.statuses.items() if status == "failed"}

    def counterexamples(self, flag: str) -> list[dict]:
        return next(i["counterexamples"] for i in self.written["invariants"] if i["flag"] == flag)

    @property
    def failed_test_ids(self) -> list[str]:
        """``test_name[parameters]`` of each FAILED line in the short summary."""
        return _FAILED.findall(self.output)

    @property
    def failed_tests(self) -> set[str]:
        """Test functions with at least one FAILED line in the short summary."""
        return {test_id.partition("[")[0] for test_id in self.failed_test_ids}

    def failure_sections(self, test: str) -> list[str]:
        """The failure section of each failed parametrisation of ``test``."""
        sections = []
        for match in _SECTION.finditer(self.output):
            if match.group(1) == test:
                following = _BANNER.search(self.output, match.end())
                sections.append(self.output[match.end() : following.start() if following else len(self.output)])
        return sections

    def failure_text(self, test: str) -> str:
        return "\n".join(self.failure_sections(test))

    @property
    def skip_reasons(self) -> set[str]:
        """The reasons of pytest's SKIPPED lines (-rs)."""
        return set(_SKIPPED.findall(self.output))

    @property
    def summary(self) -> str:
        """The plugin's "sampler conformance" section."""
        match = _SUMMARY.search(self.output)
        assert match, f"no sampler conformance section\n{self.explain()}"
        return match.group(1)

    @property
    def verdict(self) -> str:
        """The summary's last line: VERDICT, PARTIAL, INTERRUPTED, ERROR or NO VERDICT."""
        lines = [line for line in self.output.splitlines() if line.startswith(VERDICT_PREFIXES)]
        assert len(lines) == 1, f"expected one VERDICT line, got {lines}\n{self.explain()}"
        return lines[0]

    def failing_cases(self, test: str) -> list[tuple[str, tuple[int, int]]]:
        """(section, (N, W)) for each failed parametrisation of ``test`` that prints one case."""
        cases = []
        for section in self.failure_sections(test):
            found = {(int(n), int(w)) for n, w in _CASE.findall(section)}
            if len(found) == 1:
                cases.append((section, found.pop()))
        return cases

    def assert_rejected(self, rejection: Rejection) -> None:
        """The run failed exactly the invariants the catalogue's ``rejection`` allows, and the
        intended one's counterexample names it, with the case it failed on."""
        assert self.exit_code == pytest.ExitCode.TESTS_FAILED, self.explain()
        assert rejection.failed <= self.failed_invariants <= rejection.allowed, (
            f"charged beyond the catalogue: {sorted(self.failed_invariants - rejection.allowed)}; "
            f"not charged: {sorted(rejection.failed - self.failed_invariants)}\n{self.explain()}"
        )
        counterexample = self.counterexamples(rejection.flag)[0]
        assert f"[{counterexample['title']}]" == title_of(rejection) and counterexample["case"], counterexample
        if REGISTRY[rejection.flag].where is Where.MESH:  # no test of its own: charged in the mesh variants of others
            charged_in = {record["test"].partition("[")[0] for record in self.counterexamples(rejection.flag)}
            assert rejection.test in charged_in and "mesh-" in counterexample["test"], counterexample
        else:
            assert rejection.test in self.failed_tests, self.explain()

    def explain(self) -> str:
        """For assertion messages: the spec, exit code and the tail of the output."""
        return f"--sampler={self.spec} exited {self.exit_code}; output tail:\n{self.output[-6000:]}"


# Runs already made in this process, by arguments: several selftests read one run.
_RUNS: dict[tuple[str, ...], SuiteRun] = {}


def certify(
    pytester: pytest.Pytester,
    spec: str,
    *options: str,
    timeout: float = RUN_TIMEOUT_S,
    ranks: str = "simulated",
    paths: tuple[Path, ...] | None = None,
    profile: str | None = None,
) -> SuiteRun:
    """``pytest properties conformance --sampler=spec --ranks=ranks`` (or other ``paths``) in a
    fresh interpreter, cwd a temporary dir, under ``profile`` (None: :data:`SELFTEST_PROFILE`).
    ``ranks``: simulated (the default: the quick, in-process proof), groups or all. Simulated
    ranks collect ``properties/`` alone, since ``conformance/`` holds real groups' tests only:
    Hypothesis mines constants from the modules loaded, so collecting them would change the draws."""
    profile = profile or SELFTEST_PROFILE
    if paths is None:
        paths = (PROPERTIES,) if ranks == "simulated" else WHOLE_SUITE
    options = (*options, f"--ranks={ranks}")
    key = (spec, profile, *options, *map(str, paths))
    if key not in _RUNS:
        _RUNS[key] = _run(pytester, spec, *options, timeout=timeout, paths=paths, profile=profile)
    return _RUNS[key]


def certify_rejected(
    pytester: pytest.Pytester,
    spec: str,
    rejection: Rejection,
    *options: str,
    ranks: str = "simulated",
) -> SuiteRun:
    """:func:`certify` under the profile and on the meshes the rejection's proof names,
    asserting that the run failed exactly what the catalogue's ``rejection`` allows
    (:meth:`SuiteRun.assert_rejected`)."""
    if rejection.meshes is not None:
        options = (*options, f"--meshes={rejection.meshes}")
    options = (*options, *rejection.options)
    run = certify(pytester, spec, *options, ranks=ranks, profile=rejection.profile)
    run.assert_rejected(rejection)
    return run


def _run(
    pytester: pytest.Pytester, spec: str, *options: str, timeout: float, paths: tuple[Path, ...], profile: str
) -> SuiteRun:
    """Unless the options name their own --certificate, the run writes one in pytester's
    directory, and the verdict is read from it."""
    if not any(o.startswith("--cost=") for o in options):
        # The cost probe takes about 2 s a run: measured where something judges it or plans from it.
        measured = any("+scalable" in o for o in options) or "--scale" in options
        options = (*options, "--cost=measure" if measured else "--cost=skip")
    certificate = next((o.partition("=")[2] for o in options if o.startswith("--certificate=")), None)
    if certificate is None:
        certificate = str(pytester.path / "certificate")
        options = (*options, f"--certificate={certificate}")
    result = pytester.runpytest_subprocess(
        *map(str, paths),
        f"--sampler={spec}",
        *draws(profile),
        f"--rank-timeout={RANK_TIMEOUT_S}",
        "-p",
        "no:cacheprovider",
        "-rfEs",
        "--disable-warnings",
        *options,
        timeout=timeout,
    )
    output = "\n".join(result.outlines + result.errlines)
    written = Path(certificate + ".json")
    return SuiteRun(
        spec=spec,
        exit_code=int(result.ret),
        output=output,
        certificate=json.loads(written.read_text()) if written.exists() else None,
    )
