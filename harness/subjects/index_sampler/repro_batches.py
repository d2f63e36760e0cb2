"""The per-epoch invariants of index samplers that yield batches, or never stop, as a
reproduction script asserts them (``repro.py``, docs/reproductions.md): each rank's batches
read once (its ``ranks``: each rank's ``(batches, len() before the pass, len() after it)``,
and ``items``, its batches one after another), an endless stream read to the prefix the suite
reads, or an index sampler's batches as ``BatchSampler(sampler, B, drop_last)`` cuts them
(``equal_batches``). The promise is the check's (``batch_checks``, ``aspect_checks``,
``group_checks``, ``layout_checks``, ``loader_checks``), said again in plain Python; the
labels and aspect buckets the suite built the dataset with are the script's OPTIONS.

A template's ``$name`` is filled from the contract and the case (:func:`family_snippet`)."""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.subjects.common.repro_script import drawn

from .case import IndexCase
from .contracts import CONTIGUOUS_SHARES, SamplerContract
from .repro_snippets import SNIPPETS, Snippet, snippet

# The case, said with each list option (labels, aspects) shortened.
SAID = """print(f"{SPEC}: N={N}, W={W}, epoch={EPOCH}, " + ", ".join(
    f"{name}={short(value) if isinstance(value, list) else value}" for name, value in OPTIONS.items()))
"""
# Each batch shortened, where the script prints a rank's batches (after "Sampler = load(SPEC)").
BATCHES_SHOWN = """

def batches_shown(batches):
    \"\"\"The batches, each shortened, the middle ones left out where there are many.\"\"\"
    parts = [short(batch) for batch in batches]
    parts = parts if len(parts) <= 6 else [*parts[:4], f"... {len(parts) - 5} more ...", parts[-1]]
    return f"[{', '.join(parts)}]"


"""
# How the script takes a pass of a batch sampler (its read(), repro.HEAD): its batches, each as a
# list, as a DataLoader indexes the dataset with it; and their items, one after another.
TAKE_BATCHES = '''B = OPTIONS["batch_size"]  # items a batch holds (the last may hold fewer)


def as_list(batch):
    """A tuple, or a 1-D tensor or array, as its items; any other batch as it is."""
    if getattr(batch, "ndim", None) == 1:
        return batch.tolist()
    return list(batch) if isinstance(batch, tuple) else batch


def take(sampler, count):
    """A pass's first ``count`` batches (fewer, where it ends first), each as a list."""
    return [as_list(batch) for batch in itertools.islice(sampler, count)]


def items_of(batches):
    """The batches' items, one after another."""
    return [i for batch in batches for i in batch]'''
# How the script reads a batch sampler: each rank's sampler once.
READ_BATCHES = (
    BATCHES_SHOWN
    + """ranks = [read(W, r) for r in range(W)]
items = [items_of(batches) for batches, _, _ in ranks]
"""
    + SAID
    + """for r, (batches, before, after) in enumerate(ranks):
    print(f"rank {r} ({len(batches)} batches, len()={after}): {batches_shown(batches)}")
"""
)
# ... an index sampler's batches as BatchSampler(sampler, B, drop_last) cuts them (equal_batches
# of a contract whose samplers yield indices).
BATCH_SAMPLER = (
    BATCHES_SHOWN
    + """B, BATCH_DROP_LAST = $batch_size, $batch_drop_last  # BatchSampler's, as the suite's test drew them


def batcher_length(batcher):
    try:
        return len(batcher)  # BatchSampler's len() asks the sampler's
    except TypeError:
        return "no __len__"


ranks = []
for r in range(W):
    batcher = torch.utils.data.BatchSampler(build(W, r), B, BATCH_DROP_LAST)
    ranks.append((list(itertools.islice(batcher, LIMIT + 1)), None, batcher_length(batcher)))
"""
    + SAID
    + """for r, (batches, _, after) in enumerate(ranks):
    print(f"rank {r}: BatchSampler(sampler, {B}, drop_last={BATCH_DROP_LAST}) ({len(batches)} batches, "
          f"len()={after}): {batches_shown(batches)}")
"""
)
# How the script takes a reading of a sampler that never stops (its read(), repro.HEAD): the
# prefix the suite reads of each rank, whatever a finite pass's bound would be.
TAKE_PREFIX = '''PREFIX = $prefix  # indices read of each rank: ceil(2N/W) + 1, two whole blocks of N interleaved


def take(sampler, count):
    """The sampler's first PREFIX indices: it never stops (``count`` bounds a finite pass)."""
    return list(itertools.islice(sampler, PREFIX))'''
# ... an endless sampler: each rank's first PREFIX indices, as the suite reads it.
READ_PREFIX = (
    """ranks = [take(build(W, r), PREFIX) for r in range(W)]
"""
    + SAID
    + """for r, indices in enumerate(ranks):
    print(f"rank {r} (its first {len(indices)} indices): {short(indices)}")
"""
)

EQUAL_BATCHES = (
    "every rank yields the same number of batches, and len() says the same on every rank.",
    """counts = [len(batches) for batches, _, _ in ranks]
reported = [after for _, _, after in ranks if isinstance(after, int)]
broken = len(set(counts)) > 1 or len(set(reported)) > 1
shown = f"batches per rank {counts}; len() per rank {reported}\"""",
)

BATCH_SNIPPETS = {
    "equal_batches": Snippet(*EQUAL_BATCHES, reading=READ_BATCHES),
    "valid_indices": Snippet(
        "every batch is a list of ints in range(N), none empty, and a pass ends.",
        """bad = [(r, k, batch) for r, (batches, _, _) in enumerate(ranks) for k, batch in enumerate(batches)
       if not isinstance(batch, (list, tuple)) or not batch
       or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < N for i in batch)]
endless = [r for r, (batches, _, _) in enumerate(ranks) if len(batches) > LIMIT]
broken = bool(bad or endless)
shown = f"(rank, batch, what it holds) not a batch of indices of range({N}): {short(bad)}; ranks that never stop: {endless}\"""",
        reading=READ_BATCHES,
    ),
    "whole_batches": Snippet(
        "rank r's k-th batch is batch k*W + r of the batches one rank yields (num_replicas=1).",
        """one = read(1, 0)[0]
wrong = [(r, k, k * W + r) for r, (batches, _, _) in enumerate(ranks) for k, batch in enumerate(batches)
         if k * W + r < len(one) and list(batch) != list(one[k * W + r])]
broken = bool(wrong)
shown = f"one rank yields {short(one)}" + "".join(
    f"; rank {r}'s batch {k} should be batch {p} of those, {one[p]}, got {ranks[r][0][k]}" for r, k, p in wrong[:3])""",
        reading=READ_BATCHES,
    ),
    "share_batched": Snippet(
        "rank r's batches, one after another, are its $named of Q, the order one rank yields (num_replicas=1) "
        "padded from its head ($per_rank items each$less), cut into batches of $batch_size, only the last short.",
        """Q = items_of(read(1, 0)[0])
SHARE, DROPPED = $per_rank, $dropped
source = [p if p < N else (p - N) % N for p in range(SHARE * W)]  # the padding repeats Q from its head
padded = [Q[p] if p < len(Q) else None for p in source]  # None: Q lost it to its own dropped last batch
wrong = [f"one rank yields {len(Q)} items for N={N}"] if len(Q) > N else []
for r, (batches, _, _) in enumerate(ranks):
    share, got, sizes = padded[$where], items[r], [len(batch) for batch in batches]
    if not N or not Q:
        wrong += [f"rank {r} yields {len(got)} items of an empty order"] if got else []
    elif not max(len(share) - DROPPED, 0) <= len(got) <= len(share):
        wrong.append(f"rank {r} yields {len(got)} items; its share of Q holds {len(share)}")
    elif any(want is not None and want != i for want, i in zip(share, got)):
        wrong.append(f"rank {r} yields {short(got)}; its share of Q is {short(share)}")
    elif any(size != B for size in sizes[:-1]) or (sizes and not 0 < sizes[-1] <= B):
        wrong.append(f"rank {r}'s batches hold {sizes} items: B={B} each, the last 1 to {B}")
broken = bool(wrong)
shown = f"Q = {short(Q)}; " + "; ".join(wrong[:3])""",
        reading=READ_BATCHES,
    ),
    "aspect_grouped": Snippet(
        "every batch holds B items of one aspect bucket (width < height or not) but the rank's last two, the "
        "buckets' leftovers, of which at most one mixes the buckets and only the last is short.",
        """ASPECTS = OPTIONS["aspects"]  # ASPECTS[i]: item i's bucket, 0 where width < height
wrong = []
for r, (batches, _, _) in enumerate(ranks):
    sizes = [len(batch) for batch in batches]
    portraits = [sum(ASPECTS[i] == 0 for i in batch if 0 <= i < N) for batch in batches]
    mixed = [k for k, (p, size) in enumerate(zip(portraits, sizes)) if 0 < p < size]
    last = len(batches) - 1
    wrong += [f"rank {r}'s batch {k} of {last + 1}, {batch}, holds {len(batch)} items"
              for k, batch in enumerate(batches) if len(batch) > B or (k < last and len(batch) < B)]
    wrong += [f"rank {r}'s batch {k} of {last + 1}, {batches[k]}, mixes {portraits[k]} portrait and "
              f"{sizes[k] - portraits[k]} landscape items" for k in mixed if k < last - 1 or k != mixed[0]]
broken = bool(wrong)
shown = "; ".join(wrong[:3])""",
        reading=READ_BATCHES,
    ),
    "aspect_share": Snippet(
        "each rank's batches hold its strided share padded from its head, $expected items ($rule), and the ranks "
        "together repeat no index beyond the $allowed of padding.",
        """counts = collections.Counter(i for got in items for i in got if 0 <= i < N)
surplus = sum(counts.values()) - len(counts)
lengths = [len(got) for got in items]
broken = any(n != $expected for n in lengths) or surplus > $allowed
shown = f"items per rank {lengths}, each should be $expected; {surplus} items repeat an index\"""",
        reading=READ_BATCHES,
        imports=("collections",),
    ),
    "label_grouped": Snippet(
        "every batch holds at least two labels, each at least twice.",
        """LABELS = OPTIONS["labels"]  # LABELS[i]: item i's label, as the suite built the dataset
held = [(r, k, batch, collections.Counter(LABELS[i] for i in batch if 0 <= i < N))
        for r, (batches, _, _) in enumerate(ranks) for k, batch in enumerate(batches)]
wrong = [(r, k, batch, dict(labels)) for r, k, batch, labels in held if len(labels) < 2 or 1 in labels.values()]
broken = bool(wrong)
shown = "; ".join(f"rank {r}'s batch {k}, {batch}, holds (label: items) {labels}" for r, k, batch, labels in wrong[:3])""",
        reading=READ_BATCHES,
        imports=("collections",),
    ),
    "read_once": Snippet(
        "no index is read twice an epoch but in its last round of batches (which may repeat some, so every "
        "rank has one).",
        """rounds = max((len(batches) for batches, _, _ in ranks), default=0)
counts = collections.Counter(i for batches, _, _ in ranks for batch in batches[: rounds - 1] for i in batch
                             if 0 <= i < N)
twice = sorted(i for i, n in counts.items() if n > 1)
broken = bool(twice)
shown = f"{len(twice)} indices read more than once before the last round: {short(twice)}\"""",
        reading=READ_BATCHES,
        imports=("collections",),
    ),
    "leftovers_bounded": Snippet(
        "left out of the epoch, only what cannot be grouped: one item a label, the excess of the label with "
        "the most left out, and fewer than one round's W x B items.",
        """LABELS = OPTIONS["labels"]  # LABELS[i]: item i's label, as the suite built the dataset
read_ = {i for got in items for i in got}
left = [sum(1 for i in range(N) if LABELS[i] == label and i not in read_) for label in range(max(LABELS) + 1)]
most = left.index(max(left))  # the label with the most left out
beyond = sum(max(n - 1, 0) for label, n in enumerate(left) if label != most)
broken = beyond >= W * $batch_size
shown = (f"left out, per label: {left}; beyond one item a label and label {most}'s excess, {beyond} could have "
         f"been grouped, where fewer than W x B = {W * $batch_size} may be left")""",
        reading=READ_BATCHES,
    ),
    "repeat_groups": Snippet(
        "each generation batch, round t of the ranks' batches concatenated rank by rank, is groups of G=$repeats "
        "consecutive copies of one index.",
        """G = $repeats
generations = [[i for batch in round_ for i in batch] for round_ in zip(*(batches for batches, _, _ in ranks))]
wrong = [(t, gathered) for t, gathered in enumerate(generations) if len(gathered) % G
         or any(len(set(gathered[j : j + G])) > 1 for j in range(0, len(gathered), G))]
broken = bool(wrong)
shown = "; ".join(f"generation batch {t}: {short(gathered)}" for t, gathered in wrong[:2])""",
        reading=READ_BATCHES,
    ),
    "selected_once": Snippet(
        "each index is read G=$repeats times an epoch or never, and fewer than W x B / G = $per_generation "
        "indices (an incomplete generation batch) are never read.",
        """counts = collections.Counter(i for got in items for i in got if 0 <= i < N)
over = sorted(i for i, n in counts.items() if n > $repeats)
never = [i for i in range(N) if i not in counts]
broken = bool(over) or len(never) >= $per_generation
shown = f"read more than G=$repeats times: {short(over)} ({[counts[i] for i in over[:8]]}); never read: {short(never)}\"""",
        reading=READ_BATCHES,
        imports=("collections",),
    ),
    "stream_blocks_are_permutations": Snippet(
        "the ranks' streams, interleaved (item i of rank r at i x W + r), form one stream whose every block of "
        "N items is a permutation of range(N).",
        """stream = [indices[i] for i in range(PREFIX) for indices in ranks]
blocks = [stream[b * N : (b + 1) * N] for b in range(len(stream) // N if N else 0)]
wrong = [(b, block) for b, block in enumerate(blocks) if sorted(block) != list(range(N))]
broken = bool(wrong)
shown = "; ".join(f"block {b} (items {b * N} to {(b + 1) * N - 1}): {short(block)}" for b, block in wrong[:2])""",
        reading=READ_PREFIX,
    ),
}
# valid_indices of a sampler that never stops: each rank's first PREFIX items, as the suite reads them.
ENDLESS_VALID_INDICES = Snippet(
    "an endless sampler yields Python ints in range(N) and never stops: each rank has PREFIX of them.",
    """bad = [(r, at, item) for r, indices in enumerate(ranks) for at, item in enumerate(indices)
       if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < N]
stopped = [(r, len(indices)) for r, indices in enumerate(ranks) if len(indices) < PREFIX]
broken = bool(bad or stopped)
shown = f"(rank, position, item) not an index of range({N}): {short(bad)}; (rank, items before it stopped): {stopped}\"""",
    reading=READ_PREFIX,
)
# The flags read of a sampler that never stops: those its prefixes alone show...
ENDLESS = {
    "stream_blocks_are_permutations": BATCH_SNIPPETS["stream_blocks_are_permutations"],
    "valid_indices": ENDLESS_VALID_INDICES,
}
# ...and the generic readings of determinism and of the seed, which compare what each rank
# yields, here its prefix (TAKE_PREFIX).
ENDLESS_GENERIC = ("deterministic", "seed_effective")
# The generic readings that hold for batches: len() counts batches, the fault's and determinism's
# readings compare whatever the sampler yields, a refusal reads nothing, and the seed's and the
# epochs' readings compare the batches' items one after another, as the suite does.
GENERIC = (
    "len_matches_iter",
    "edge_sizes",
    "deterministic",
    "validates_arguments",
    "seed_effective",
    "reshuffles_on_set_epoch",
)
COVERED = {**BATCH_SNIPPETS, **{flag: SNIPPETS[flag] for flag in GENERIC}}


def reads_batches(flag: str, contract: SamplerContract) -> bool:
    """Whether ``flag`` under ``contract`` is read here: every flag of a contract whose samplers
    yield batches or never stop, and an index sampler's batch counts."""
    return contract.yields_batches or not contract.finite or flag == "equal_batches"


def family_snippet(
    flag: str, contract: SamplerContract, case: IndexCase, record: Mapping[str, Any], world_size_name: str
) -> Snippet:
    """The snippet of ``flag`` filled in for ``contract``, ``case`` and what the failing test drew
    (``record``); CannotReproduce where this contract's samplers have no reading of it yet."""
    if flag in (GENERIC if contract.finite else ENDLESS_GENERIC):
        return snippet(SNIPPETS[flag], contract, case, record, world_size_name)
    if not contract.finite:  # each rank's prefix, as the suite reads a sampler that never stops
        if flag not in ENDLESS:
            raise CannotReproduce(f"no plain-Python reading of {flag} for samplers that never stop yet")
        found = ENDLESS[flag]
    elif flag in BATCH_SNIPPETS:
        found = BATCH_SNIPPETS[flag]
    else:
        raise CannotReproduce(f"no plain-Python reading of {flag} for samplers that yield batches yet")
    if flag == "equal_batches" and not contract.yields_batches:
        found = Snippet(*EQUAL_BATCHES, reading=BATCH_SAMPLER, imports=("torch",))
    values = _values(contract, case, record)
    if "$batch_drop_last" in found.reading and values["batch_drop_last"] is None:
        raise CannotReproduce("the failing test's record holds no BatchSampler drop_last: nothing to build again")
    promise, code, reading = (Template(t).substitute(values) for t in (found.promise, found.code, found.reading))
    return Snippet(promise, code, reading=reading, imports=found.imports)


def _values(contract: SamplerContract, case: IndexCase, record: Mapping[str, Any]) -> dict[str, Any]:
    """What the templates name, from the contract's rules and the case."""
    n, w, b, drop_last = case.dataset_size, case.world_size, case.batch_size, case.drop_last
    contiguous = contract.layout == CONTIGUOUS_SHARES
    # share_batched: a rank's share (batch_checks.share_batches_mismatch) and how much drop_last may cut from it.
    per_rank = n // w if contiguous and drop_last else -(-n // w)
    # aspect_share: the share is always padded (mmengine's DefaultSampler); drop_last cuts whole batches of it.
    share = contract.expected_length(n, w, drop_last=False)
    return {
        "batch_size": b,
        "batch_drop_last": drawn(record, "BatchSampler drop_last"),
        "repeats": case.repeats,
        "per_generation": max(w * b // max(case.repeats, 1), 1),
        "per_rank": per_rank,
        "dropped": b - 1 + (n % w != 0 and not contiguous) if drop_last else 0,
        "where": "r * SHARE : (r + 1) * SHARE" if contiguous else "r::W",
        "named": "contiguous block" if contiguous else "strided share Q[r::W]",
        "less": ", less fewer than a batch with drop_last" if drop_last else "",
        "expected": share - share % b if drop_last else share,
        "rule": f"ceil(N/W)={share} less its remainder by B={b}" if drop_last else f"ceil(N/W)={share}",
        "allowed": contract.padding_size(n, w, drop_last=False),
    }
