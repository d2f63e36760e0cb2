"""The Hypothesis profiles, registered in one place, and the draws a certification makes.

``dev`` is quick, ``ci`` is the default when the CI environment variable is set,
``thorough`` runs thousands of examples per property. ``--hypothesis-profile`` picks one.

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
PROFILES: dict[str, dict[str, Any]] = {
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
_COMMON: dict[str, Any] = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    phases=[phase for phase in Phase if phase is not Phase.explain],
)

for _name, _values in PROFILES.items():
    settings.register_profile(_name, **_COMMON, **_values)


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


def search_database(rootdir: Path, spec: str) -> Path:
    """Load the search profile with its example database for ``spec`` under ``rootdir`` (where
    the run started);
    return the folder."""
    digest = hashlib.sha256(spec.encode()).hexdigest()[:16]
    folder = rootdir / SEARCH_DATABASE_DIR / digest
    settings.register_profile(
        SEARCH, parent=settings.get_profile(SEARCH), database=DirectoryBasedExampleDatabase(str(folder))
    )
    settings.load_profile(SEARCH)
    return folder


settings.load_profile(default_profile())
