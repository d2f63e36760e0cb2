"""The per-epoch invariants a reproduction script asserts, each in plain Python: the promise in
one comment, and the lines that set ``broken`` (the promise does not hold) and ``shown`` (the
offending values), written against the script's ``ranks`` (each rank's ``(indices, len()
before the pass, len() after it)``) and ``read`` (``repro.py``). The same promise as the
check declared in the per-epoch table (``checks.PER_EPOCH``), said again without numpy or the
suite, for a reader who has neither.

A template's ``$name`` is filled from the contract and the case (:func:`snippet`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.subjects.common.repro_script import drawn

from .case import IndexCase
from .contracts import SamplerContract
from .order_checks import least_comparable
from .resume_labels import CHECKPOINT_LABEL, NEW_WORLD_LABEL

# How the script reads the ranks before its promise: each rank's sampler of RANKS once (the
# per-epoch invariants), ``ranks`` holding each one's (indices, len() before the pass, len()
# after). RANKS is every rank, but at a numeric edge (repro.py: the ranks the suite read there).
READ_ONCE = """ranks = [read(W, r) for r in RANKS]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
for r, (indices, before, after) in zip(RANKS, ranks):
    print(f"rank {r} ({len(indices)} indices, len()={after}): {short(indices)}")
"""
# ... each rank in turn, up to the first that raises: its exception is the fault.
FAULT = """print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
ranks, fault = [], ""
for r in range(W):
    try:
        ranks.append(read(W, r))
    except Exception as exc:  # the sampler's own: in its constructor, set_epoch, len() or its pass
        fault = f"rank {r}: {type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stdout)
        break
    indices, before, after = ranks[-1]
    print(f"rank {r} ({len(indices)} indices, len()={after}): {short(indices)}")
"""
# ... three ways, as the suite's test_same_order_without_set_epoch: the global RNGs seeded, the
# sampler built and read, read again, then a fresh one read once they are reseeded.
THREE_WAYS = """GLOBAL_SEED = $global_seed  # the global RNGs' seed the suite drew


def seed_global_rngs(seed):
    torch.manual_seed(seed)
    numpy.random.seed(seed % 2**32)
    random.seed(seed)


def global_rngs():
    \"\"\"torch's, numpy's and random's global RNG states, to see whether iterating advanced them.\"\"\"
    return {"torch": bytes(torch.get_rng_state().tolist()), "numpy": pickle.dumps(numpy.random.get_state()),
            "random": random.getstate()}


ranks, again, fresh, touched = [], [], [], set()
for r in range(W):
    seed_global_rngs(GLOBAL_SEED)
    sampler = build(W, r)
    before = global_rngs()
    ranks.append(read(W, r, sampler))
    touched |= {name for name, state in global_rngs().items() if state != before[name]}
    again.append(read(W, r, sampler)[0])
    seed_global_rngs(GLOBAL_SEED + 1)
    fresh.append(read(W, r)[0])
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}, global RNGs seeded with {GLOBAL_SEED}")
for r, (indices, before, after) in enumerate(ranks):
    print(f"rank {r} ({len(indices)} indices): {short(indices)}; again: {short(again[r])}; fresh: {short(fresh[r])}")
"""

# ... each rank under each of the two seeds the test drew (seed_effective).
TWO_SEEDS = """SEEDS = $seeds  # the seeds the suite's test drew
orders = [[i for r in range(W) for i in $items(read(W, r, build(W, r, seed=seed))[0])] for seed in SEEDS]
print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, {OPTIONS}")
for seed, order in zip(SEEDS, orders):
    print(f"seed={seed}: {short(order)} (ranks concatenated)")
"""
# ... one sampler per rank for the whole run, set_epoch before each epoch the test drew, as
# the DistributedSampler documentation prescribes (reshuffles_on_set_epoch).
EPOCHS = """EPOCHS = $epochs  # the epochs the suite's test drew
samplers = [build(W, r, epoch=None) for r in range(W)]
has_set_epoch = all(callable(getattr(sampler, "set_epoch", None)) for sampler in samplers)
orders = []
for epoch in EPOCHS:
    for sampler in samplers:
        if has_set_epoch:
            sampler.set_epoch(epoch)
    orders.append([i for r, sampler in enumerate(samplers) for i in $items(read(W, r, sampler)[0])])
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}")
for epoch, order in zip(EPOCHS, orders):
    print(f"set_epoch({epoch}): {short(order)} (ranks concatenated)")
"""

# ... no reading: one construction with the invalid arguments the test gave (validates_arguments).
INVALID = """WORLD, RANK = $bad_world, $bad_rank  # invalid: rank outside range(num_replicas), or num_replicas <= 0
print(f"{SPEC}: N={N}, {OPTIONS}, num_replicas={WORLD}, rank={RANK}")
try:
    built = Sampler(DATASET, $world_size_name=WORLD, rank=RANK, **OPTIONS)
except Exception as exc:  # refused at once, as torch's DistributedSampler refuses: what the promise asks
    built = None
    print(f"refused: {type(exc).__name__}: {exc}")
"""
# The invalid arguments of a validates_arguments violation, in the words of its message.
INVALID_ARGUMENTS = re.compile(r"constructing with num_replicas=(-?\d+), rank=(-?\d+)")


# The one-rank reading of a snippet that reads one (Snippet.one_rank): the sampler built with
# num_replicas=1, rank=0, read in the script's process (a group script reads it in rank 0's).
ONE_RANK_READ = "read(1, 0)"


@dataclass(frozen=True)
class Snippet:
    promise: str  # the one comment that states it
    code: str  # sets broken and shown
    one_rank: bool = False  # reads the sampler built with num_replicas=1, rank=0 too
    global_order: bool = False  # needs Q, the global order the shares are cut from (ORDERS)
    reading: str = READ_ONCE  # how the ranks are read before the promise
    imports: tuple[str, ...] = field(default=())  # the modules its reading and code need besides the standard ones


# Q as the contract's layout cuts the ranks' shares from it; None where strided shares of
# unequal lengths form no one order.
ORDERS = {
    "strided": (
        "lengths = sorted({len(indices) for indices, _, _ in ranks})\n"
        "Q = [ranks[i % W][0][i // W] for i in range(W * lengths[0])] if len(lengths) == 1 else None"
    ),
    "contiguous": "lengths = [len(indices) for indices, _, _ in ranks]\nQ = [i for indices, _, _ in ranks for i in indices]",
}

SNIPPETS = {
    "len_matches_iter": Snippet(
        "len(sampler), asked before a pass and after it, is the number of indices the pass yields.",
        "wrong = [(r, before, after, len(indices)) for r, (indices, before, after) in zip(RANKS, ranks)\n"
        "         if not before == after == len(indices)]\n"
        "broken = bool(wrong)\n"
        'shown = "; ".join(f"rank {r}: len() is {b} before the pass and {a} after it, but it yielded {n}"'
        " for r, b, a, n in wrong)",
    ),
    "equal_length": Snippet(
        "every rank yields $expected indices ($rule).",
        "wrong = {r: len(indices) for r, (indices, _, _) in zip(RANKS, ranks) if len(indices) != $expected}\n"
        "broken = bool(wrong)\n"
        'shown = f"every rank should yield $expected indices, got (rank: count) {wrong}"',
    ),
    "balanced": Snippet(
        "the ranks' lengths sum to N and differ by at most 1.",
        "lengths = [len(indices) for indices, _, _ in ranks]\n"
        "broken = sum(lengths) != N or max(lengths) - min(lengths) > 1\n"
        'shown = f"lengths {lengths}, N={N}"',
    ),
    "valid_indices": Snippet(
        "every index is a Python int in range(N), and a pass ends.",
        "bad = [(r, at, item) for r, (indices, _, _) in zip(RANKS, ranks) for at, item in enumerate(indices)\n"
        "       if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < N]\n"
        "endless = [r for r, (indices, _, _) in zip(RANKS, ranks) if len(indices) > LIMIT]\n"
        "broken = bool(bad or endless)\n"
        'shown = f"(rank, position, item) not an index of range({N}): {short(bad)}; ranks that never stop: {endless}"',
    ),
    "covers": Snippet(
        "without drop_last the ranks together yield every index of range(N).",
        "missing = sorted(set(range(N)) - {i for indices, _, _ in ranks for i in $items(indices)})\n"
        "broken = bool(missing)\n"
        'shown = f"{len(missing)} indices never yielded: {short(missing)}"',
    ),
    "edge_sizes": Snippet(
        "every rank's sampler is built, set to its epoch and read to the end of its pass without raising.",
        "broken = bool(fault)\nshown = fault",
        reading=FAULT,
        imports=("traceback",),
    ),
    "deterministic": Snippet(
        "without set_epoch a sampler's order depends on its arguments alone: iterated again, or built afresh "
        "once the global RNGs are reseeded, it yields the same indices, and iterating leaves torch's, numpy's "
        "and random's global RNGs as they were.",
        "changed = [r for r in range(W) if again[r] != ranks[r][0]]\n"
        "reseeded = [r for r in range(W) if fresh[r] != ranks[r][0]]\n"
        "broken = bool(changed or reseeded or touched)\n"
        'shown = "; ".join([f"rank {r} yielded {short(ranks[r][0])}, then {short(again[r])} iterated again" for r in changed[:2]]\n'
        '                  + [f"rank {r} built afresh, the global RNGs reseeded, yielded {short(fresh[r])}" for r in reseeded[:2]]\n'
        "                  + [f\"iterating advanced the global RNGs of {', '.join(sorted(touched))}\"] * bool(touched))",
        reading=THREE_WAYS,
        imports=("pickle", "random", "numpy", "torch"),
    ),
    "validates_arguments": Snippet(
        "num_replicas <= 0, or a rank outside range(num_replicas), is refused when the sampler is built.",
        'broken = built is not None\nshown = f"it returned a sampler for num_replicas={WORLD}, rank={RANK}"',
        reading=INVALID,
    ),
    "seed_effective": Snippet(
        "two seeds give two orders (where at least $least items are compared).",
        "broken = len(orders[0]) >= $least and orders[0] == orders[1]\n"
        'shown = f"seed={SEEDS[0]} and seed={SEEDS[1]} gave the same indices on every rank: {short(orders[0])}"',
        reading=TWO_SEEDS,
    ),
    "reshuffles_on_set_epoch": Snippet(
        "set_epoch(e) before each epoch gives each epoch its own order (where at least $least items are compared).",
        "same = [(EPOCHS[a], EPOCHS[b]) for a, b in itertools.combinations(range(len(EPOCHS)), 2)\n"
        "        if len(orders[a]) >= $least and orders[a] == orders[b]]\n"
        "broken = not has_set_epoch or bool(same)\n"
        'shown = ("the sampler has no set_epoch(): every epoch is the first" if not has_set_epoch else "; ".join(\n'
        '    f"set_epoch({a}) and set_epoch({b}) gave the same indices" for a, b in same[:3]))',
        reading=EPOCHS,
    ),
    "disjoint": Snippet(
        "no index repeats beyond the $allowed padded items the contract allows here ($rule).",
        "counts = collections.Counter(i for indices, _, _ in ranks for i in indices)\n"
        "surplus = sum(counts.values()) - len(counts)\n"
        "broken = surplus > $allowed\n"
        'shown = f"{surplus} items repeat an index; repeated: {short(sorted(i for i, n in counts.items() if n > 1))}"',
        imports=("collections",),
    ),
    "pads_from_head": Snippet(
        "the padding after the first N items of the global order Q repeats Q's head.",
        "padding = Q[N:] if Q is not None else []\n"
        "expected = (Q[:N] * len(padding))[: len(padding)] if Q is not None else []\n"
        "broken = Q is None or padding != expected\n"
        'shown = (f"padding Q[{N}:] = {short(padding)}, expected {short(expected)}" if Q is not None\n'
        '         else f"the ranks yield different numbers of indices {lengths}: no one order")',
        global_order=True,
    ),
    "unshuffled_in_order": Snippet(
        "with shuffle=False the global order Q starts with range(N) in order.",
        "broken = Q is None or Q[:N] != list(range(min(N, len(Q))))\n"
        'shown = f"Q = {short(Q)}" if Q is not None else f"the ranks yield different numbers of indices {lengths}"',
        global_order=True,
    ),
    "strided": Snippet(
        "rank r yields Q[r::W], Q the order one rank yields (num_replicas=1) padded from its head.",
        "one = $alone[0]\n"
        "size = max(len(indices) for indices, _, _ in ranks) * W\n"
        "Q = [one[i % len(one)] for i in range(size)] if one else []\n"
        "wrong = [r for r, (indices, _, _) in enumerate(ranks) if indices != Q[r::W]]\n"
        "broken = sorted(one) != list(range(N)) or bool(wrong)\n"
        'shown = f"one rank yields {short(one)}" + "".join(\n'
        '    f"; rank {r} should yield Q[{r}::{W}] = {short(Q[r::W])}, got {short(ranks[r][0])}" for r in wrong[:3])',
        one_rank=True,
    ),
    "contiguous": Snippet(
        "rank r yields the r-th block of Q, Q the order one rank yields (num_replicas=1) padded from its head.",
        "one = $alone[0]\n"
        "block = max(len(indices) for indices, _, _ in ranks)\n"
        "Q = [one[i % len(one)] for i in range(block * W)] if one else []\n"
        "wrong = [r for r, (indices, _, _) in enumerate(ranks) if indices != Q[r * block : (r + 1) * block]]\n"
        "broken = sorted(one) != list(range(N)) or bool(wrong)\n"
        'shown = f"one rank yields {short(one)}" + "".join(\n'
        '    f"; rank {r} should yield Q[{r * block}:{(r + 1) * block}] = {short(Q[r * block : (r + 1) * block])}, "\n'
        '    f"got {short(ranks[r][0])}" for r in wrong[:3])',
        one_rank=True,
    ),
}


# A pass's units as a check counts them: its items ($items(units)), the units of the epoch's
# global order without its padding ($epoch_units; $whole_units: built without drop_last) and
# the items a unit holds ($per_unit, a factor). A batch sampler's are its batches
# (repro_batches.TAKE_BATCHES: items_of, B), as elastic_checks.epoch_order counts them.
UNITS = {
    False: {"items": "list", "epoch_units": "N", "whole_units": "N", "per_unit": ""},
    True: {
        "items": "items_of",
        "epoch_units": "N // B if DROP_LAST else -(-N // B)",
        "whole_units": "-(-N // B)",
        "per_unit": " * B",
    },
}


def snippet(
    found: Snippet,
    contract: SamplerContract,
    case: IndexCase,
    record: Mapping[str, Any],
    world_size_name: str,
    alone: str = ONE_RANK_READ,
) -> Snippet:
    """The snippet ``found`` filled in for ``contract``, ``case`` and what the failing test
    drew (``record``), its code led by the global order it reads, where it reads one
    (``world_size_name``: what the sampler calls num_replicas; ``alone``: the one-rank
    reading's expression, where it reads one)."""
    values = {
        "expected": contract.expected_length(case.dataset_size, case.world_size, case.drop_last),
        "rule": contract.length_words(case.drop_last),
        "allowed": contract.padding_size(case.dataset_size, case.world_size, case.drop_last),
        "global_seed": drawn(record, "global RNG seed") or 0,
        "seeds": drawn(record, "seeds"),
        "epochs": drawn(record, "epochs"),
        "k": drawn(record, CHECKPOINT_LABEL),
        "new_world": drawn(record, NEW_WORLD_LABEL),
        "least": least_comparable(contract),
        "world_size_name": world_size_name,
        "alone": alone,
        **UNITS[contract.yields_batches],
    }
    invalid = INVALID_ARGUMENTS.search(record.get("message", ""))
    values["bad_world"], values["bad_rank"] = (int(g) for g in invalid.groups()) if invalid else (None, None)
    for name in ("seeds", "epochs", "bad_world", "k", "new_world"):
        if f"${name}" in found.reading and values[name] is None:
            raise CannotReproduce(f"the failing test's record holds no {name}: nothing to build again")
    code = Template(found.code).substitute(values)
    if found.global_order:
        code = ORDERS["contiguous" if contract.layout == "contiguous" else "strided"] + "\n" + code
    promise, reading = (Template(text).substitute(values) for text in (found.promise, found.reading))
    return Snippet(promise, code, found.one_rank, found.global_order, reading, found.imports)
