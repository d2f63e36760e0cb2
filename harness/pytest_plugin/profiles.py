"""The Hypothesis profiles, registered in one place, and the draws a certification makes.

``quick`` is a smoke run (10 examples a property, held on 8 judged cases, counterexamples
not shrunk), ``dev`` the default, ``ci`` the default when the CI environment variable is set,
``thorough`` runs thousands of examples per property. ``selftest`` is the suite's own: quick at
half its examples and one through loader workers, on which its selftests prove each
known-bad's exact verdict; it certifies nothing. ``--hypothesis-profile`` picks one.

A certification is reproducible: every profile but ``search`` draws from a fixed seed
(:data:`CERTIFICATION_SEED`, or the ``--hypothesis-seed`` given) and keeps no example
database, so the same command gives the same cases whatever earlier runs left in the
directory. ``search`` is the opt-in exploration: fresh random draws on every run, with
its failures kept in an example database of its own per sampler (:func:`search_database`),
which no certification reads.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

SEARCH = "search"
SELFTEST = "selftest"
# A smoke run: the first counterexample found is shown as drawn, not shrunk (shrinking a
# failure in real groups re-runs it through fresh loader workers, most of such a run's time).
_QUICK: dict[str, Any] = dict(max_examples=10, phases=[Phase.explicit, Phase.generate])
PROFILES: dict[str, dict[str, Any]] = {
    "quick": _QUICK,
    # The selftests' draws (selftests/suite_run.py): enough to catch the corpus's known-bads on
    # the fixed seed's draws (a proof that needs more names quick or dev) and to judge a
    # conforming sampler on the floor of 4. Not a certification: held rests on 4 cases.
    SELFTEST: {**_QUICK, "max_examples": 5},
    "dev": dict(max_examples=25),
    "ci": dict(max_examples=100, print_blob=True),
    "thorough": dict(max_examples=2_000),
    SEARCH: dict(max_examples=100, print_blob=True),
}

# The seed of every certification's draws unless --hypothesis-seed gives another.
CERTIFICATION_SEED = 0
# Where the search profile keeps the failures it found, one folder per sampler spec.
SEARCH_DATABASE_DIR = Path(".sampler-conformance") / "search-examples"

# Samplers do real work per example (W objects, N up to 10,000): wall time varies with
# the machine, so no deadline, and no complaint about slow data generation.
#
# No explain phase: after shrinking, it replays each failure many times to say which
# draws did not matter. The suite prints its own evidence (case, ranks, draws), and on
# a failing sampler the replays cost more than the search did.
#
# No example database: a certification replays nothing from earlier runs (see above).
#
# One failure per test: each test judges one invariant, and its first failure, shrunk, is
# the evidence the verdict needs. Hypothesis's default goes on drawing after a failure, to
# find and shrink others that differ: in a real group every step of that is a round trip
# through fresh DataLoader workers (a resume test of a stream: 28 s, 16 s without).
_COMMON: dict[str, Any] = dict(
    deadline=None,
    report_multiple_bugs=False,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    phases=[phase for phase in Phase if phase is not Phase.explain],
)

for _name, _values in PROFILES.items():
    settings.register_profile(_name, **{**_COMMON, **_values})


# Tests in real process groups: each example is a round trip to every rank, so they run a
# fifth of a property's examples, or more where the world sizes are few (see group_examples).
ROUND_TRIP_SHARE = 5
# DataLoader workers start per example on every rank: those examples cost far more.
WORKER_SHARE = 50
# At least this many, unless a fifth of the profile's examples is fewer (the selftests' 5: one,
# which catches every known-bad their proofs run; loader workers were a tenth of the
# selftests' time, 584 s to 532 s, 2026-11-27).
MIN_WORKER_EXAMPLES = 2


def judged_floor() -> int:
    """The cases an invariant's tests must judge together before it counts as held: four in
    five of the examples one property runs (8 under quick, 20 under dev, 80 under ci, 1,600
    under thorough; 4 under the selftests' profile), so that up to one in five may be set
    aside where the sampler crashed.
    Were the cases independent draws, a bug on a fraction p of them would slip through F
    judged cases with probability (1 - p)**F: below 5% for p >= 1/7 at F = 20, p >= 1/27 at
    80; at quick's 8, up to 29% for p = 1/7: a smoke run, not a certification to rely on."""
    return settings().max_examples * 4 // 5


# How many world sizes the run's groups have (--world-sizes): set by the plugin at configure,
# read when the group tests' modules are collected.
_group_world_sizes = 1


def use_group_world_sizes(count: int) -> None:
    global _group_world_sizes
    _group_world_sizes = count


def group_examples() -> int:
    """Examples per test in real process groups: a fifth of the profile's, and at least
    enough that one test's world sizes together reach the floor (7 each at 1, 2 and 4
    ranks under dev; 20 at one world size)."""
    return max(settings().max_examples // ROUND_TRIP_SHARE, -(-judged_floor() // _group_world_sizes))


def worker_examples() -> int:
    """Examples per test whose DataLoader starts worker processes on every rank: the profile's
    share (:data:`WORKER_SHARE`), at least :data:`MIN_WORKER_EXAMPLES`, or a fifth of the
    profile's examples where that is fewer (one under the selftests' profile)."""
    examples = settings().max_examples
    least = max(1, min(MIN_WORKER_EXAMPLES, examples // ROUND_TRIP_SHARE))
    return max(least, examples // WORKER_SHARE)


def default_profile() -> str:
    return "ci" if os.environ.get("CI") else "dev"


def fixed_seed(given: str | None) -> int | str | None:
    """The seed of this run's draws: the ``--hypothesis-seed`` given (an int when it reads as
    one, as Hypothesis's own option takes it), else :data:`CERTIFICATION_SEED`; None under
    the search profile, which draws afresh."""
    if given is not None:
        return int(given) if given.lstrip("-").isdigit() else given
    if settings.get_current_profile_name() == SEARCH:
        return None
    return CERTIFICATION_SEED


def describe_draws(seed: int | str | None, database: Path | str | None) -> str:
    """The run's draws in words, for the report header and the certificate."""
    if seed is None:
        return f"fresh random draws, failures kept in {database}"
    return f"draws fixed by seed {seed} (the same cases on every run)"


def search_database(rootdir: Path, spec: str) -> Path:
    """Load the search profile with its example database for ``spec`` under ``rootdir`` (where
    the run started); return the folder."""
    digest = hashlib.sha256(spec.encode()).hexdigest()[:16]
    folder = rootdir / SEARCH_DATABASE_DIR / digest
    settings.register_profile(
        SEARCH, parent=settings.get_profile(SEARCH), database=DirectoryBasedExampleDatabase(str(folder))
    )
    settings.load_profile(SEARCH)
    return folder


settings.load_profile(default_profile())
