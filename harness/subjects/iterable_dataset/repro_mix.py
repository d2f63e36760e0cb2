"""What a streaming dataset's reproduction script (``repro.py``) reads and asserts for a mix of
sources (``mix_checks.py``): one epoch of every rank, as ``READ_ALL`` reads it, and each
(rank, worker) pair's sources in the order it read them. The statistical ``mix_frequencies``
has its test written out: the draws, the suite's anytime-valid bound and its threshold (its
share of the certification's false-alarm rate, as docs/statistical-invariants.md states it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sampler_conformance.core.frequencies import ANYTIME_TILTS, FalseAlarmBudget
from sampler_conformance.core.subject import CannotReproduce

from .case import StreamCase
from .mix_checks import CHANCE_OF_SAME_SOURCES
from .repro_snippets import READ_ALL, Code, Snippet

# Each pair's sources in its order, and the sources' probabilities, after every rank's epoch.
PAIRS = (
    READ_ALL
    + """source = {i: k for k, ids in enumerate(OPTIONS["sources"]) for i in ids}  # -1: an id of no source
sequences = {}  # (rank, worker) -> the sources it read, in order (worker -1: the rank's own process)
for r, batches in enumerate(ranks):
    for w, ids in batches:
        sequences.setdefault((r, w), []).extend(source.get(i, -1) for i in ids)
P = [w / sum(OPTIONS["weights"]) for w in OPTIONS["weights"]]
"""
)
# The suite's test of the frequencies, as mix_checks.check_mix_frequencies runs it.
FREQUENCIES = (
    PAIRS
    + '''

def log_evidence(c, t, p):
    """log E for a source of probability p drawn c times in t draws: the mean over TILTS of the
    martingales exp(lam c - t log(1 + p (e^lam - 1))); the least over what the one unseen draw
    that ended the pair may hide (none, another source's, this one's)."""
    if p <= 0 or p >= 1:
        return math.inf if (c > 0 if p <= 0 else c != t) else 0.0
    psi = numpy.log1p(p * numpy.expm1(TILTS))
    means = [numpy.logaddexp.reduce(TILTS * (c + a) - (t + d) * psi) - math.log(TILTS.size) for d, a in HIDDEN]
    return float(min(means))


counts = [[seq.count(k) for k in range(len(P))] for seq in sequences.values()]
counts += [[0] * len(P)] * max(STREAMS - len(counts), 0)  # a pair that read nothing counts too
tested = [k for k in range(len(P)) if P[k] > 0 or sum(row[k] for row in counts)]
bounds = {}  # each source's bound on its p-value: 1 / the mean of the pairs' evidence (Ville's inequality)
for k in tested:
    mean = numpy.logaddexp.reduce([log_evidence(row[k], sum(row), P[k]) for row in counts]) - math.log(len(counts))
    bounds[k] = math.exp(-max(mean, 0.0))
    drawn = sum(row[k] for row in counts)
    print(f"source {k}: drawn {drawn} times of {sum(map(sum, counts))}, probability {P[k]:.3g}, p-value <= {bounds[k]:.3g}")
threshold = ALPHA / len(tested)  # Bonferroni over the sources tested
worst = min(bounds, key=bounds.get) if bounds else None
'''
)


def _frequency_test(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    """The test's false-alarm rate (its share of the certification's, among the profile's
    examples) and the suite's tilts, written as numpy makes them."""
    from hypothesis import settings  # the profile's examples, in the controller: ranks never load Hypothesis

    alpha = FalseAlarmBudget(tests=settings().max_examples).per_test
    sizes = "numpy.geomspace(0.01, 8.0, 24)"
    if not np.array_equal(
        ANYTIME_TILTS, np.concatenate([-np.geomspace(0.01, 8.0, 24)[::-1], np.geomspace(0.01, 8.0, 24)])
    ):
        raise CannotReproduce("the suite's tilts are no longer the ones its scripts write")
    tilts = Code(f"numpy.concatenate([-{sizes}[::-1], {sizes}])  # the mixture's bets, as the suite's")
    return case, {"ALPHA": alpha, "TILTS": tilts, "HIDDEN": [(0, 0), (1, 0), (1, 1)]}


MIX_SNIPPETS = {
    "mix_frequencies": Snippet(
        "all (rank, worker) pairs' draws, counted by source, follow the weights: no source's bound on its "
        "p-value (an anytime-valid test, valid however each pair stops) reaches the threshold, the test's "
        "false-alarm rate {ALPHA:.3g} over the sources tested.",
        "broken = worst is not None and bounds[worst] <= threshold\n"
        'shown = f"source {worst}: a p-value of at most {bounds.get(worst, 1):.3g} against a threshold of {threshold:.3g}"',
        reading=FREQUENCIES,
        imports=("collections", "math", "numpy"),
        setup=_frequency_test,
    ),
    "mix_pairs_independent": Snippet(
        "no two (rank, worker) pairs draw the same sources in the same order, where independent draws by the "
        f"weights would with a chance of at most {CHANCE_OF_SAME_SOURCES:g}.",
        "q = sum(p * p for p in P)  # two independent pairs draw the same n sources with chance q ** n\n"
        "pairs = itertools.combinations(sequences.items(), 2)\n"
        f"same = [(a, b, min(len(x), len(y))) for (a, x), (b, y) in pairs if q ** min(len(x), len(y)) <= "
        f"{CHANCE_OF_SAME_SOURCES!r} and x[: len(y)] == y[: len(x)]]\n"
        "broken = bool(same)\n"
        'shown = f"pairs {same[0][0]} and {same[0][1]} drew the same {same[0][2]} sources: '
        '{short(sequences[same[0][0]][: same[0][2]])}" if same else ""',
        reading=PAIRS,
    ),
}
