"""How many Hypothesis examples a test in a real process group gets (``sampler_conformance.pytest_plugin.profiles``).

Each example is a round trip to every rank (milliseconds, but W processes on few cores),
so these tests take a fifth of the active profile's examples, or more where the world
sizes are few, so that an invariant judged only here still reaches the floor of judged
cases (``profiles.judged_floor``). Loader tests whose workers start on every rank take
far fewer: the same invariants are judged without workers too.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from sampler_conformance.pytest_plugin.profiles import group_examples, worker_examples

# The group fixture is function-scoped on purpose: it is the same live pool for every
# example, and a fault quarantines the rest of one test only.
_HEALTH = [*settings().suppress_health_check, HealthCheck.function_scoped_fixture]

round_trips = settings(max_examples=group_examples(), suppress_health_check=_HEALTH)
with_workers = settings(max_examples=worker_examples(), suppress_health_check=_HEALTH)

# Loader tests read every batch through the DataLoader: keep N where that is quick.
MAX_LOADER_DATASET_SIZE = 600
