"""What a known-bad subject's bug must make a certification charge, declared on the subject.

Each known-bad class or factory of the corpus carries its :class:`Rejection`, put there by
``@rejected(...)`` above it: the test that checks the invariant its bug breaks, that
invariant, the others it genuinely breaks too (and why), the contract it is certified under,
and whether its exact-verdict selftest runs it through the whole suite (in-process and in
real groups) or through the in-process properties alone. ``selftests/catalogue.py`` derives
its tables of expected verdicts from these declarations, and ``selftests/test_registry.py``
holds every invariant's declared known-bad to them.

This module imports nothing from the suite: the corpus is loaded in rank processes and, in
``test_installed_package.py``, as a user's own package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

# The test generated from the registry for every per-epoch invariant of the index sampler
# (properties/test_per_epoch.py).
PER_EPOCH_TEST = "test_per_epoch_invariant"
# The test of +scalable, which judges the cost measured before the draws (properties/test_cost.py).
COST_TEST = "test_cost_follows_share"
# The per-epoch invariants judged at the numeric edges, under --scale (properties/test_numeric_edges.py).
EDGE_TEST = "test_at_the_numeric_edge"
WEIGHTED_EDGE_TEST = "test_weighted_at_the_numeric_edge"
# A proof at the numeric edges: --scale, with room for the edge's reading whatever the machine's
# load, and --rank-timeout as the bound on what a rank really takes. A rank reads 2^24 + 1 items
# there in 10-30 s, but the read is planned from a projection: fitted to two sizes measured on a
# loaded run, MultinomialPastTheCap's grew as N^1.3 (N^0.4 unloaded) and projected 1.62 min per
# rank, two ranks past a budget of 3 min; the edge went unjudged and the known-bad conformed.
AT_THE_EDGES = ("--scale", "--read-budget=600", "--rank-timeout=120")


@dataclass(frozen=True)
class Rejection:
    test: str  # the test function that checks the intended invariant
    flag: str  # the invariant the bug breaks
    implied: dict[str, str] = field(default_factory=dict)  # other invariants the bug genuinely breaks, and why
    # The contract it is certified under, and how: through the whole suite (in-process and in
    # real groups), or through the in-process properties alone.
    under: str = "torch"
    whole_suite: bool = False
    # The subject raises: the failure is titled as its subject's fault ("[dataset fault]"), not by the invariant.
    crashes: bool = False
    # Invariants the bug also breaks, but only on cases that random draws may or may not reach
    # (say N < W/2 in one test): allowed to fail, not required to. Hypothesis's draws for a fixed
    # seed still depend on its version and on which modules are loaded (it mines their constants).
    sometimes: dict[str, str] = field(default_factory=dict)
    # The Hypothesis profile its proof certifies under, where the selftests' own one draws
    # too few cases to show the bug (say, only on weights spread far apart); None: the selftests' own.
    profile: str | None = None
    # The meshes its proof certifies on (--meshes) under +mesh, where the default's cannot show
    # the bug (say, one that mistakes a cp dimension for data); None: those its selftest gives.
    meshes: str | None = None
    # More options its proof certifies with (--scale: the numeric edges, where alone the bug shows).
    options: tuple[str, ...] = ()

    @property
    def failed(self) -> set[str]:
        """The invariants a full run must report failed..."""
        return {self.flag, *self.implied}

    @property
    def allowed(self) -> set[str]:
        """...and the only ones it may: anything else charged is a wrong verdict."""
        return self.failed | set(self.sometimes)


Bad = TypeVar("Bad", bound=Callable[..., object])


def rejected(
    test: str,
    flag: str,
    implied: Mapping[str, str] | None = None,
    *,
    under: str,
    whole_suite: bool = False,
    crashes: bool = False,
    sometimes: Mapping[str, str] | None = None,
    profile: str | None = None,
    meshes: str | None = None,
    options: tuple[str, ...] = (),
) -> Callable[[Bad], Bad]:
    """Declares what the decorated known-bad class or factory must be rejected for (:class:`Rejection`):
    one declaration for each way its selftests run it (``whole_suite``, ``under``)."""
    rejection = Rejection(
        test, flag, dict(implied or {}), under, whole_suite, crashes, dict(sometimes or {}), profile, meshes, options
    )

    def declared(bad: Bad) -> Bad:
        bad.rejections = (rejection, *vars(bad).get("rejections", ()))  # type: ignore[attr-defined]
        return bad

    return declared


def every(flags: str, why: str) -> dict[str, str]:
    """The same reason for each of the space-separated ``flags``."""
    return {flag: why for flag in flags.split()}
