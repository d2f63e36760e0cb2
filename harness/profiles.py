"""The Hypothesis profiles, registered in one place.

``dev`` is quick, ``ci`` is the default when the CI environment variable is set,
``thorough`` runs thousands of examples per property. ``--hypothesis-profile`` picks one.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

PROFILES: dict[str, dict[str, Any]] = {
    "dev": dict(max_examples=25),
    "ci": dict(max_examples=100, print_blob=True),
    "thorough": dict(max_examples=2_000),
}

# Samplers do real work per example (W objects, N up to 10,000): wall time varies with
# the machine, so no deadline, and no complaint about slow data generation.
#
# No explain phase: after shrinking, it replays each failure many times to say which
# draws did not matter. The suite prints its own evidence (case, ranks, draws), and on
# a failing sampler the replays cost more than the search did.
_COMMON: dict[str, Any] = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    phases=[phase for phase in Phase if phase is not Phase.explain],
)

for _name, _values in PROFILES.items():
    settings.register_profile(_name, **_COMMON, **_values)


def default_profile() -> str:
    return "ci" if os.environ.get("CI") else "dev"


settings.load_profile(default_profile())
