"""Imported last by the selftests' warm pytest server (``warm_pytest.PRELOAD``): Hypothesis's
constants of the local modules loaded so far, mined there once instead of in every run forked
from it.

When a run collects its tests, Hypothesis parses the source of every local module loaded (here
the suite's own, installed editable) for constants to draw now and then. Its on-disk cache of
them lies in the run's directory, which is new for each run: the parse took 16% of a run
forked from the server. The mining adds each module not seen before to one set, so a run forked
from here draws from the same constants as a run started afresh.
"""

from __future__ import annotations

try:  # Hypothesis's own function, not its public interface: without it, each run mines as before
    from hypothesis.internal.conjecture.providers import _get_local_constants
except ImportError:  # pragma: no cover - another Hypothesis
    pass
else:
    _get_local_constants()
