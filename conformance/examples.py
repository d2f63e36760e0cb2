"""How many Hypothesis examples a test in a real process group gets.

Each example is a round trip to every rank (milliseconds, but W processes on few
cores), so these tests take a fifth of the active profile's examples: 5 under dev,
20 under ci, 400 under thorough.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

ROUND_TRIP_SHARE = 5
MIN_EXAMPLES = 3
# DataLoader workers are forked per epoch on every rank: those examples cost far more.
WORKER_SHARE = 50

# The group fixture is function-scoped on purpose: it is the same live pool for every
# example, and a fault quarantines the rest of one test only.
_HEALTH = [*settings().suppress_health_check, HealthCheck.function_scoped_fixture]

round_trips = settings(
    max_examples=max(MIN_EXAMPLES, settings().max_examples // ROUND_TRIP_SHARE), suppress_health_check=_HEALTH
)
with_workers = settings(max_examples=max(2, settings().max_examples // WORKER_SHARE), suppress_health_check=_HEALTH)

# Loader tests read every batch through the DataLoader: keep N where that is quick.
MAX_LOADER_DATASET_SIZE = 600
