"""The statistical readings of a weighted sampler's reproduction scripts (``repro.py``): each
draws what the suite's test drew (the same epochs, the same ranks, the same number of draws),
counts as it counted, and bounds each item's p-value by the suite's bound
(``harness.core.frequencies``) against the suite's threshold, written out. The sampler is
seeded, so the script prints the same each time it runs.

Each is a ``string.Template``: ``$threshold`` is the test's (from its words), ``$alpha`` its
false-alarm rate where the threshold depends on the rank, ``$first_epoch`` the first of the
epochs it counted."""

from __future__ import annotations

from sampler_conformance.subjects.common.repro_script import BOUND

# All ranks' draws of one epoch together against the weights (frequencies_match_weights): each
# item's count against Binomial(D, p_i).
FREQUENCIES = (
    """THRESHOLD = $threshold  # the suite's: this test's share of the false-alarm rate 1e-6, over the items tested
ranks = [read_rank(W, r, [EPOCH])[0][0] for r in range(W)]
TOTAL = sum(WEIGHTS)
counts = collections.Counter(i for draws in ranks for i in draws if 0 <= i < len(WEIGHTS) and WEIGHTS[i] > 0)
D = sum(counts.values())


"""
    + BOUND
    + """


def first_never_drawn(w):
    \"\"\"The first item of weight w that was never drawn, or None.\"\"\"
    i = WEIGHTS.index(w)
    while i in counts:
        try:
            i = WEIGHTS.index(w, i + 1)
        except ValueError:  # every item of weight w was drawn
            return None
    return i


# Each item's bound: those drawn, each; of those never drawn, whose bound their weight sets, the first of each weight.
never_drawn = [first_never_drawn(w) for w in set(WEIGHTS) if w > 0]
tested = sorted([*counts, *(i for i in never_drawn if i is not None)]) if D else []
bounds = {i: bound(counts[i], D, WEIGHTS[i] / TOTAL) for i in tested}
worst = min(bounds, key=bounds.get) if bounds else None
print(f"{D} draws; item {worst} drawn {counts[worst]} times where {D * WEIGHTS[worst] / TOTAL:.1f} were expected"
      if bounds else "no draws")
"""
)
FREQUENCIES_CODE = (
    "broken = worst is not None and bounds[worst] <= THRESHOLD\n"
    'shown = f"item {worst}: p-value at most {bounds[worst]:.3g}, threshold {THRESHOLD:.3g}" if bounds else ""'
)

# Each rank's draws of one epoch against the weights of its partition (frequencies_in_partition):
# torch's DistributedSampler's at the epoch, by the seed, an index once per place it holds (a
# padded partition weighs a repeated index twice); the ranks judged in turn, as the suite does.
IN_PARTITION = (
    """ALPHA = $alpha  # the suite's false-alarm rate of one rank's test: 1e-6 over the tests it may run
ranks = [read_rank(W, r, [EPOCH])[0][0] for r in range(W)]
parts = []
for r in range(W):
    partition = torch.utils.data.DistributedSampler(range(len(WEIGHTS)), num_replicas=W, rank=r, seed=OPTIONS["seed"])
    partition.set_epoch(EPOCH)
    parts.append(list(partition))
    print(f"rank {r}: partition {short(sorted(set(parts[r])))}; {len(ranks[r])} draws: {short(ranks[r])}")


"""
    + BOUND
    + """


def judged(r):
    \"\"\"What is wrong with rank r's draws against its partition's weights, or "".\"\"\"
    mass = [0.0] * len(WEIGHTS)
    for i in parts[r]:
        mass[i] += WEIGHTS[i]
    if sum(mass) == 0:
        return ""  # a partition of no weight is not judged
    inside = [i for i in ranks[r] if 0 <= i < len(WEIGHTS)]
    foreign = sorted({i for i in inside if mass[i] == 0 and WEIGHTS[i] > 0})
    if foreign:
        return f"rank {r} drew {short(foreign)}, outside its partition {short(sorted(set(parts[r])))}"
    P = [m / sum(mass) for m in mass]
    counts = collections.Counter(i for i in inside if P[i] > 0)
    D = sum(counts.values())
    bounds = {i: bound(counts[i], D, p) for i, p in enumerate(P) if p > 0}
    worst = min(bounds, key=bounds.get)
    if bounds[worst] > ALPHA / len(bounds):
        return ""
    return (f"rank {r}: item {worst} drawn {counts[worst]} of {D} times where {D * P[worst]:.1f} were expected, "
            f"p-value at most {bounds[worst]:.3g}, threshold {ALPHA / len(bounds):.3g}")


wrong = [found for found in map(judged, range(W)) if found]
"""
)
IN_PARTITION_CODE = 'broken = bool(wrong)\nshown = wrong[0] if wrong else ""'

# In how many of the epochs each item was among all ranks' draws (inclusion_follows_weights),
# against the probability that successive sampling by the weights includes it, computed
# exactly over every set of items drawn first: Binomial(epochs, pi_i) each.
INCLUSION = (
    """THRESHOLD = $threshold  # the suite's: this test's share of the false-alarm rate 1e-6, over the items tested
EPOCHS = range($first_epoch, EPOCH + 1)  # as the suite's test drew the first; set_epoch before each
ranks = [[draws for draws, _ in read_rank(W, r, EPOCHS)] for r in range(W)]
included = [0] * len(WEIGHTS)  # in how many epochs item i was among all ranks' draws
for e in range(len(EPOCHS)):
    drawn = {i for r in range(W) for i in ranks[r][e]}
    for i in range(len(WEIGHTS)):
        included[i] += i in drawn


def inclusion(weights, draws):
    \"\"\"The chance that item i is among ``draws`` draws, each by the weights of the items not yet drawn.\"\"\"
    first = {0: 1.0}  # a set of items (bit i: item i) drawn first: its chance
    for _ in range(draws):
        after = collections.defaultdict(float)
        for drawn, chance in first.items():
            left = sum(w for i, w in enumerate(weights) if not drawn >> i & 1)
            for i, w in enumerate(weights):
                if w > 0 and not drawn >> i & 1:
                    after[drawn | 1 << i] += chance * w / left
        first = after
    return [min(1.0, sum(c for drawn, c in first.items() if drawn >> i & 1)) for i in range(len(weights))]


"""
    + BOUND
    + """


PI = inclusion(WEIGHTS, W * OPTIONS["num_samples"])
bounds = {i: bound(included[i], len(EPOCHS), p) for i, p in enumerate(PI) if p > 0}
worst = min(bounds, key=bounds.get) if bounds else None
print(f"{len(EPOCHS)} epochs from {EPOCHS[0]}; item inclusions {short(included)}, expected {short([round(len(EPOCHS) * p, 1) for p in PI])}")
"""
)
INCLUSION_CODE = (
    "broken = worst is not None and bounds[worst] <= THRESHOLD\n"
    'shown = (f"item {worst}: included in {included[worst]} of {len(EPOCHS)} epochs, with probability {PI[worst]:.3f}; "\n'
    '         f"p-value at most {bounds[worst]:.3g}, threshold {THRESHOLD:.3g}") if bounds else ""'
)
