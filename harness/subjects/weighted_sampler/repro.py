"""A plain-Python script that reproduces one counterexample of a weighted sampler without the
suite (docs/reproductions.md): it imports the factory the spec names (and so torch), builds every
rank's sampler of the case with the arguments the suite built it with (the weights,
``num_samples``, the seed), calls ``set_epoch`` before each epoch and reads its draws as the
suite read them, asserts the promise, prints the suite's words and exits 1 while the bug is there.

Covered, under every weighted contract: a fault charged to ``weighted_runs`` where the sampler
raised, ``drawn_indices``, ``zero_weight_never_drawn``, ``draw_counts`` and
``weighted_deterministic``. Under the contracts that draw with replacement, with the chance
that a conforming sampler's streams are alike written out (by the weights over the whole
dataset, or under ``weighted_partition`` those of each rank's DistributedSampler partition),
``ranks_draw_apart``, ``weighted_reshuffles`` and ``weighted_seed_effective``; the statistical
``frequencies_match_weights`` (``weighted``) and ``frequencies_in_partition``
(``weighted_partition``); under ``weighted_without_replacement``, ``draws_distinct`` and the
statistical ``inclusion_follows_weights`` (``repro_frequencies``: each draws what the suite's test
drew and writes out its bound and threshold). At the numeric edge (``--scale``: 2^24 + 1
weights, written as runs of equal weights), ``weighted_runs`` and ``frequencies_match_weights``,
what its test judges there. Found on simulated ranks (a failure found in a real group only is
read in one process and the script says so; the suite offers it only where it fails there too).
The rest raise :class:`CannotReproduce`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sampler_conformance.core.case import LONG_SEQUENCE, runs
from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.frequencies import FalseAlarmBudget
from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.subjects.common.repro_script import (
    FAULT_TEMPLATE,
    LOAD,
    SAMPLER_RAISES,
    SHORT,
    TAKEN,
    docstring,
    drawn,
    imports,
    main_part,
    sampler_twice,
    script_spec,
    snippet_for,
    threshold,
    written_in,
)

from .case import MAX_SIMULATED_WORLD_SIZE, WeightedCase, read_limit
from .chance import SAME_BY_CHANCE
from .contracts import WeightedContract
from .edges import JUDGED
from .plug import WeightedPlug
from .repro_frequencies import (
    FREQUENCIES,
    FREQUENCIES_CODE,
    IN_PARTITION,
    IN_PARTITION_CODE,
    INCLUSION,
    INCLUSION_CODE,
)

# {name} is filled in, {{ }} stays a brace.
HEAD = """{docstring}

{imports}

SPEC = sys.argv[1] if len(sys.argv) > 1 else {spec!r}  # or another weighted sampler factory, to compare
W, EPOCH = {w}, {epoch}
WEIGHTS = {weights}  # item i's weight
OPTIONS = {options!r}  # those the factory takes are given
LIMIT = {limit}  # a rank that draws more than this in an epoch never stops


{load}


{taken}


def read_rank(world, rank, epochs, **options):
    \"\"\"Rank ``rank``'s sampler of ``world``, built afresh (``options`` in place of OPTIONS' own),
    set_epoch(e) before each of ``epochs`` (None: not called): per epoch, its draws, and len()
    after the pass.\"\"\"
    sampler = Factory(WEIGHTS, num_replicas=world, rank=rank, **taken({{**OPTIONS, **options}}))
    read = []
    for epoch in epochs:
        if epoch is not None and callable(getattr(sampler, "set_epoch", None)):
            sampler.set_epoch(epoch)
        draws = list(itertools.islice(sampler, LIMIT + 1))
        read.append((draws, len(sampler) if hasattr(type(sampler), "__len__") else "no __len__"))
    return read


{short}


"""
SAID = "{SPEC}: W={W}, epoch={EPOCH}, {OPTIONS}, weights {short(WEIGHTS)}"  # the case, as the script prints it

# One epoch of every rank: its draws, and len() after the pass.
ONE_EPOCH = """ranks = [read_rank(W, r, [EPOCH])[0] for r in range(W)]
for r, (draws, length) in enumerate(ranks):
    print(f"rank {r} ({len(draws)} draws, len()={length}): {short(draws)}")
"""
# ... each rank in turn, up to the first that raises: its exception is the fault.
FAULT = FAULT_TEMPLATE.format(unpacked="((draws, _),)", name="draws", thing="sampler", own=SAMPLER_RAISES)
# ... a sampler that read another epoch first, and a fresh one (weighted_deterministic).
TWICE = sampler_twice("WEIGHTS")
# The chance that a conforming sampler's two streams of n draws, with replacement, by the laws
# p and q, are alike: (sum_i p_i q_i)^n; a pair is judged only where it is below its share of
# SAME_BY_CHANCE, as the suite judges. $law: what a rank draws by (WHOLE_LAW, PARTITION_LAW).
CHANCE = """P = [w / sum(WEIGHTS) for w in WEIGHTS]
SHARE = $same_by_chance / max(W * (W - 1) // 2, W)  # each comparison's share of the chance allowed


$law


def alike_by_chance(a, b, p, q):
    \"\"\"Streams a and b, drawn by the laws p and q, are equal, and a conforming sampler's would be so
    with a chance below SHARE.\"\"\"
    return a == b and sum(x * y for x, y in zip(p, q)) ** len(a) <= SHARE


"""
WHOLE_LAW = """def law(r, seed, epoch):
    \"\"\"What rank r draws each index by: the weights over the whole dataset, at every seed and epoch.\"\"\"
    return P"""
PARTITION_LAW = """def law(r, seed, epoch):
    \"\"\"What rank r draws each index by: the weights of its DistributedSampler partition at the seed
    and epoch, normalised (the whole dataset's where it weighs nothing).\"\"\"
    partition = torch.utils.data.DistributedSampler(range(len(WEIGHTS)), num_replicas=W, rank=r, seed=seed)
    partition.set_epoch(epoch)
    mass = [0.0] * len(WEIGHTS)
    for i in partition:
        mass[i] += WEIGHTS[i]
    return [m / sum(mass) for m in mass] if sum(mass) else P"""
# ... every pair of ranks (ranks_draw_apart).
PAIRS = (
    CHANCE
    + """ranks = [read_rank(W, r, [EPOCH])[0][0] for r in range(W)]
for r, draws in enumerate(ranks):
    print(f"rank {r}: {short(draws)}")
laws = [law(r, OPTIONS["seed"], EPOCH or 0) for r in range(W)]
alike = [(a, b) for a in range(W) for b in range(a + 1, W) if alike_by_chance(ranks[a], ranks[b], laws[a], laws[b])]
"""
)
# ... one sampler a rank, set_epoch before each of two epochs (weighted_reshuffles).
TWO_EPOCHS = (
    CHANCE
    + """EPOCHS = $epochs  # as the suite's test drew them
ranks = [[draws for draws, _ in read_rank(W, r, EPOCHS)] for r in range(W)]
for r, (first, second) in enumerate(ranks):
    print(f"rank {r}: epoch {EPOCHS[0]}: {short(first)}; epoch {EPOCHS[1]}: {short(second)}")
alike = [r for r, (first, second) in enumerate(ranks)
         if alike_by_chance(first, second, *(law(r, OPTIONS["seed"], epoch) for epoch in EPOCHS))]
"""
)
# ... every rank under the case's seed and another the test drew (weighted_seed_effective).
TWO_SEEDS = (
    CHANCE
    + """SEEDS = [$first_seed, OPTIONS["seed"]]  # the case's seed, and the other the suite's test drew
ranks = [[read_rank(W, r, [EPOCH], seed=seed)[0][0] for seed in SEEDS] for r in range(W)]
for r, (first, second) in enumerate(ranks):
    print(f"rank {r}: seed {SEEDS[0]}: {short(first)}; seed {SEEDS[1]}: {short(second)}")
alike = [r for r, (first, second) in enumerate(ranks)
         if alike_by_chance(first, second, *(law(r, seed, EPOCH or 0) for seed in SEEDS))]
"""
)


@dataclass(frozen=True)
class Snippet:
    promise: str
    code: str  # sets broken and shown
    reading: str = ONE_EPOCH
    imports: tuple[str, ...] = ()


SNIPPETS = {
    "weighted_runs": Snippet(
        "every rank's sampler is built, set to its epoch and draws its epoch without raising.",
        "broken = bool(fault)\nshown = fault",
        reading=FAULT,
        imports=("traceback",),
    ),
    "drawn_indices": Snippet(
        "every draw is an int index in range(N).",
        "bad = [(r, d) for r, (draws, _) in enumerate(ranks) for d in draws\n"
        "       if not isinstance(d, numbers.Integral) or isinstance(d, bool) or not 0 <= d < len(WEIGHTS)]\n"
        'broken = bool(bad)\nshown = f"(rank, draw) that are not: {short(bad)}"',
        imports=("numbers",),
    ),
    "zero_weight_never_drawn": Snippet(
        "an item of weight 0 is never drawn.",
        "banned = sorted({(r, d) for r, (draws, _) in enumerate(ranks) for d in draws\n"
        "                 if isinstance(d, numbers.Integral) and 0 <= d < len(WEIGHTS) and WEIGHTS[d] == 0})\n"
        'broken = bool(banned)\nshown = f"(rank, item of weight 0) drawn: {short(banned)}"',
        imports=("numbers",),
    ),
    "draw_counts": Snippet(
        "each rank draws num_samples indices per epoch, and len() says so.",
        "wrong = [(r, len(draws), length) for r, (draws, length) in enumerate(ranks)\n"
        '         if len(draws) != OPTIONS["num_samples"] or length not in (OPTIONS["num_samples"], "no __len__")]\n'
        "broken = bool(wrong)\nshown = f\"(rank, draws, len()) where num_samples={OPTIONS['num_samples']}: {short(wrong)}\"",
    ),
    "weighted_deterministic": Snippet(
        "the draws of an epoch are set by the seed and the epoch: a sampler that read another epoch first, and "
        "a fresh one, draw the same.",
        'broken = first != fresh\nshown = f"rank 0 after epoch {BEFORE}: {short(first[0])}; fresh: {short(fresh[0])}"',
        reading=TWICE,
    ),
    "ranks_draw_apart": Snippet(
        "the ranks draw different streams (two alike only by a chance below the suite's share of 1e-12).",
        'broken = bool(alike)\nshown = f"pairs of ranks that drew the same stream: {alike}"',
        reading=PAIRS,
    ),
    "weighted_reshuffles": Snippet(
        "set_epoch gives each rank another stream (alike only by a chance below the suite's share of 1e-12).",
        'broken = bool(alike)\nshown = f"ranks that drew the same stream in both epochs: {alike}"',
        reading=TWO_EPOCHS,
    ),
    "weighted_seed_effective": Snippet(
        "another seed gives each rank another stream (alike only by a chance below the suite's share of 1e-12).",
        'broken = bool(alike)\nshown = f"ranks that drew the same stream under both seeds: {alike}"',
        reading=TWO_SEEDS,
    ),
    "frequencies_match_weights": Snippet(
        "all ranks' draws together follow the weights: no item's count is so far from D x its probability that "
        "its p-value bound falls to the suite's threshold.",
        FREQUENCIES_CODE,
        reading=FREQUENCIES,
        imports=("collections", "math"),
    ),
    "frequencies_in_partition": Snippet(
        "each rank draws only from its DistributedSampler partition, each item as often as its share of the "
        "partition's weight: no count so far off that its p-value bound falls to the suite's threshold.",
        IN_PARTITION_CODE,
        reading=IN_PARTITION,
        imports=("collections", "math", "torch"),
    ),
    "draws_distinct": Snippet(
        "without replacement, no item is drawn twice in an epoch, by one rank or by two.",
        "counts = collections.Counter(i for draws, _ in ranks for i in draws)\n"
        "again = sorted(i for i, n in counts.items() if n > 1)\n"
        'broken = bool(again)\nshown = f"drawn more than once: {short([(i, counts[i]) for i in again])} (item, times)"',
        imports=("collections",),
    ),
    "inclusion_follows_weights": Snippet(
        "each item is among an epoch's draws as often as successive sampling by the weights includes it: no "
        "item's count of epochs so far off that its p-value bound falls to the suite's threshold.",
        INCLUSION_CODE,
        reading=INCLUSION,
        imports=("collections", "math"),
    ),
}
# The flags whose scripts hold under every weighted contract; the others under those that promise them.
EVERY_CONTRACT = frozenset(
    {"weighted_runs", "drawn_indices", "zero_weight_never_drawn", "draw_counts", "weighted_deterministic"}
)
# Their chance that two streams are alike is written for draws with replacement.
STREAMS_APART = frozenset({"ranks_draw_apart", "weighted_reshuffles", "weighted_seed_effective"})


def covered_at_the_edge(contract: Contract) -> frozenset[str]:
    """Those of :func:`covered` a script is written for at the numeric edge too: what the edge's
    test judges (``edges.JUDGED``), its 2^24 + 1 weights written as runs of equal weights."""
    return covered(contract) & frozenset(JUDGED)


def weights_written(weights: tuple[float, ...]) -> str:
    """The weights as the script writes them: a list, or past LONG_SEQUENCE (a numeric edge's),
    its runs of equal weights joined (``[1.0] * 16_777_216 + [16777216.0]``)."""
    if len(weights) <= LONG_SEQUENCE:
        return repr(list(weights))
    return " + ".join(f"[{weight!r}] * {count:_}" if count > 1 else f"[{weight!r}]" for weight, count in runs(weights))


def covered(contract: Contract) -> frozenset[str]:
    """The flags a script is written for under ``contract`` (a weighted one)."""
    assert isinstance(contract, WeightedContract)
    if not contract.replacement:
        return EVERY_CONTRACT | {"draws_distinct", "inclusion_follows_weights"}
    frequencies = "frequencies_in_partition" if contract.partitioned else "frequencies_match_weights"
    return EVERY_CONTRACT | STREAMS_APART | {frequencies}


def filled(reading: str, record: Mapping[str, Any], contract: WeightedContract) -> str:
    """``reading`` with what the failing test drew written in (its epochs, the other seed, the
    first epoch it counted) and the threshold of its frequency test (from its words), or the
    false-alarm rate of one rank's test where the threshold depends on the rank; what a rank draws
    by, under ``contract``."""
    epochs = drawn(record, "epochs")
    values = {
        "same_by_chance": SAME_BY_CHANCE,
        "law": PARTITION_LAW if contract.partitioned else WHOLE_LAW,
        "alpha": partition_alpha(),
        "epochs": epochs,
        "before": epochs[0] if epochs else None,
        "first_seed": drawn(record, "seed"),
        "first_epoch": drawn(record, "first epoch"),
        "threshold": threshold(record),
    }
    return written_in(reading, values)


def partition_alpha() -> float:
    """The false-alarm rate of one rank's test of frequencies_in_partition, as its test shares
    the budget: a test per rank of at most MAX_SIMULATED_WORLD_SIZE, each example."""
    from hypothesis import settings  # the profile's examples, in the controller: ranks never load Hypothesis

    return FalseAlarmBudget(tests=settings().max_examples * MAX_SIMULATED_WORLD_SIZE).per_test


def script_for(plug: Plug, contract: Contract, record: Mapping[str, Any], filename: str) -> str:
    """The script that reproduces ``record``, to be saved as ``filename``; CannotReproduce says why not."""
    assert isinstance(plug, WeightedPlug) and isinstance(contract, WeightedContract)
    if record["flag"] in SNIPPETS and record["flag"] not in covered(contract):
        raise CannotReproduce(
            f"under contract {contract.name!r}, which draws without replacement, a script of {record['flag']} is not "
            f"written: its chance that two streams are alike is written for draws with replacement"
        )
    if plug.needs_process_group or plug.takes_mesh:
        raise CannotReproduce("the sampler takes its rank from the process group or a device mesh")
    found = snippet_for(record, SNIPPETS, FAULT, "sampler", covered_at_the_edge(contract))
    case = WeightedCase.from_parameters(record["parameters"])
    spec = script_spec(plug)
    partition_law = ("torch",) if contract.partitioned and "$law" in found.reading else ()  # DistributedSampler's
    head = HEAD.format(
        docstring=docstring(record, spec, filename),
        imports=imports(("inspect", *found.imports, *partition_law)),
        spec=spec,
        w=case.world_size,
        epoch=case.epoch,
        weights=weights_written(case.weights),
        options=case.sampler_options(),
        limit=read_limit(case),
        load=LOAD,
        taken=TAKEN.format(),
        short=SHORT,
    )
    main = main_part(SAID, record, filled(found.reading, record, contract), found.promise, found.code)
    return head + main
