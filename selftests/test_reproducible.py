"""The same command gives the same verdict and the same counterexamples, whatever earlier
runs left in the directory: a certification draws its cases from a fixed seed and keeps no
example database. The search profile explores afresh and keeps what it finds in a folder of
its own, which no certification reads."""

from __future__ import annotations

import json
from pathlib import Path

from sampler_conformance.pytest_plugin.profiles import CERTIFICATION_SEED, SEARCH_DATABASE_DIR

from .suite_run import PROPERTIES, RANK_TIMEOUT_S, RUN_TIMEOUT_S, SELFTEST_PROFILE

SPEC = "selftests.corpus.evidence:RareSeedBug"
# The certifications run an eighth of the tests, those on simulated ranks and the batch
# counts: the rare bug is among their fixed draws, in four invariants. The whole suite would
# prove the same in twice the time.
CERTIFIED = "simulated or lengths"


def _run(pytester, *options: str, keyword: str = CERTIFIED) -> dict:
    """One run from pytester's directory, without --hypothesis-seed: the user's command,
    restricted to the tests ``keyword`` selects."""
    certificate = pytester.path / "certificate.json"
    certificate.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(
        str(PROPERTIES),
        f"--sampler={SPEC}",
        f"--hypothesis-profile={SELFTEST_PROFILE}",
        f"--rank-timeout={RANK_TIMEOUT_S}",
        f"--certificate={certificate.with_suffix('')}",
        "-k",
        keyword,
        *options,
        timeout=RUN_TIMEOUT_S,
    )
    assert certificate.exists(), "\n".join(result.outlines[-40:] + result.errlines[-20:])
    return json.loads(certificate.read_text())


def _outcome(certificate: dict) -> tuple:
    """What must not change between runs: the verdict, each status and each counterexample."""
    return (
        certificate["verdict"]["summary"],
        [
            (i["flag"], i["status"], [(c["message"], c["case"]) for c in i["counterexamples"]])
            for i in certificate["invariants"]
        ],
    )


def test_three_certifications_with_a_search_between_give_one_verdict(pytester):
    first = _run(pytester)
    second = _run(pytester)
    # A search restricted with -k, as a developer runs one while debugging: it explores
    # afresh and saves what it finds, where the certifications cannot read it.
    search = _run(pytester, "--hypothesis-profile=search", keyword="covers")
    third = _run(pytester)

    assert first["run"]["hypothesis_seed"] == CERTIFICATION_SEED and first["run"]["example_database"] is None
    assert _outcome(first) == _outcome(second) == _outcome(third)
    # The rare bug is within the fixed draws, so every certification names it the same way.
    assert first["verdict"]["state"] == "does not conform", first["verdict"]

    database = Path(search["run"]["example_database"])
    assert search["run"]["hypothesis_seed"] is None
    # What the search found, if anything (its draws are random), it kept there and only there.
    assert database.is_relative_to(pytester.path / SEARCH_DATABASE_DIR), database
    # Nothing in Hypothesis's default database folder, which every sampler certified here would share.
    assert not (pytester.path / ".hypothesis" / "examples").exists()
