"""The resumable and elastic invariants of a resume's edges and compositions, as a reproduction
script asserts them (``+resumable``, ``+elastic``): a state taken at the epoch's boundaries
(``resume_at_boundaries``), two resumes in one epoch (``resumes_compose``) and two changes of
world size in a row (``elastic_hops_compose``); the protocols of ``scenarios/resume.py`` and
``scenarios/elastic.py`` in plain Python, and the promise that failed, as ``resume_checks.py``
and ``elastic_checks.py`` say it.

An invariant whose test checks several readings (a state taken before the epoch's first item,
and one taken after its pass) has one script per reading: the failing test's message names the
one that failed (:data:`PARTS`, :func:`part_for`)."""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.subjects.common.repro_script import drawn

from .repro_resume import EPOCH_ORDER, HELPERS, IMPORTS, RESUME_SNIPPETS
from .repro_snippets import Snippet
from .resume_labels import BETWEEN_CHECKPOINTS_LABEL, FIRST_CHECKPOINT_LABEL, LAST_WORLD_LABEL, MIDDLE_TAKEN_LABEL

# A rank's runs as the resume protocol reads them: an uninterrupted one (``passes`` of a
# ``fresh`` sampler, UNINTERRUPTED), and one interrupted at each cut and resumed into a fresh
# sampler (STEPS).
UNINTERRUPTED = (
    HELPERS
    + """def fresh(r, seed=GLOBAL_SEED):
    \"\"\"Rank r's sampler, built once the global RNGs are seeded with ``seed``.\"\"\"
    seed_global_rngs(seed)
    return build(W, r, epoch=None)


def passes(sampler, r, epochs):
    \"\"\"The sampler's pass of each epoch of ``epochs``, set_epoch before each.\"\"\"
    read_passes = []
    for epoch in epochs:
        set_epoch(sampler, epoch)
        read_passes.append(read(W, r, sampler)[0])
    return read_passes


"""
)
STEPS = (
    UNINTERRUPTED
    + """def resumed(r, cuts, seed=GLOBAL_SEED):
    \"\"\"Rank r's epoch EPOCH, checkpointed once it has taken each cut's items in all, each
    state loaded into a fresh sampler (the global RNGs seeded with ``seed``): the items taken
    before the checkpoints, and the last sampler.\"\"\"
    sampler, taken = fresh(r), []
    for cut in cuts:
        set_epoch(sampler, EPOCH)
        taken += take(sampler, cut - len(taken))
        state, _ = through_checkpoint(sampler.state_dict())
        sampler = fresh(r, seed)
        sampler.load_state_dict(state)
    return taken, sampler


"""
)
# ... and where every rank's resumed pass is compared with another's: the first rank and epoch
# where they differ ((epoch, rank, expected, got) each).
DIFFERING = """wrong = [(e, r, want, got) for r, (wants, gots) in enumerate(zip(expected, resumed_passes))
         for e, want, got in zip(EPOCHS, wants, gots) if want != got][:1]
"""
SHOWN = (
    "broken = bool(wrong)\n"
    'shown = "; ".join(f"rank {r}, epoch {e}: $expected {short(want)}, $got {short(got)}" for e, r, want, got in wrong)'
)
AT_START = (
    STEPS
    + """EPOCHS = [EPOCH]
expected = [passes(fresh(r), r, EPOCHS) for r in range(W)]
resumed_passes = []
for r in range(W):
    taken, sampler = resumed(r, [0])  # the state of a sampler set to EPOCH, before its first item
    resumed_passes.append([taken + passes(sampler, r, EPOCHS)[0]])
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, resumed from a state taken before the first item of epoch {EPOCH}")
"""
    + DIFFERING
)
AT_END = (
    STEPS
    + """EPOCHS = [EPOCH + 1, EPOCH + 2]  # the loop goes on at the next epoch
expected = [passes(fresh(r), r, [EPOCH, *EPOCHS])[1:] for r in range(W)]
resumed_passes = []
for r in range(W):
    _, sampler = resumed(r, [LIMIT + 1])  # the state once the pass of EPOCH has ended
    resumed_passes.append(passes(sampler, r, EPOCHS))
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, resumed from a state taken after the pass of epoch {EPOCH} ended")
"""
    + DIFFERING
)
TWICE = (
    """K, J = $first_k, $between  # items each rank read before the first checkpoint, then between the two (as drawn)
"""
    + STEPS
    + """EPOCHS = [EPOCH]
lengths = [len(passes(fresh(r), r, EPOCHS)[0]) for r in range(W)]  # no cut goes past a rank's pass
expected = [passes(resumed(r, [min(K + J, n)])[1], r, EPOCHS) for r, n in enumerate(lengths)]
resumed_passes = [passes(resumed(r, [min(K, n), min(K + J, n)])[1], r, EPOCHS) for r, n in enumerate(lengths)]
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, epoch {EPOCH} resumed after {K} items, then again {J} items later")
"""
    + DIFFERING
)
# W ranks take k items each and save; W' ranks load rank 0's state, take j items each and save;
# W'' ranks load rank 0's state of W' and read the rest (scenarios/elastic.py, legs).
CHAIN = (
    """K, W1, J, W2 = $k, $new_world, $hop_j, $last_world  # W ranks take K each, W1 ranks J each, W2 the rest (as drawn)
"""
    + HELPERS
    + EPOCH_ORDER
    + """

def leg(world, state, count=None):
    \"\"\"Each of ``world`` ranks: a fresh sampler that loads ``state`` (if any), set to EPOCH,
    then its first ``count(r)`` items (None: the rest of its pass); and rank 0's state after them.\"\"\"
    shares, saved = [], None
    for r in range(world):
        seed_global_rngs()
        sampler = build(world, r, epoch=None)
        if state is not None:
            sampler.load_state_dict(state)
        set_epoch(sampler, EPOCH)
        shares.append(read(world, r, sampler)[0] if count is None else take(sampler, count(r)))
        if r == 0 and count is not None:
            saved, _ = through_checkpoint(sampler.state_dict())
    return shares, saved


first, state = leg(W, None, lambda r: min(K, len(whole[r])))
middle, state = leg(W1, state, lambda r: J)
rest, _ = leg(W2, state)
taken = first + middle
at = min(len(order), sum(map(len, taken)))  # the global cursor: items both legs took in all
got = interleaved(rest)
print(f"{SPEC}: N={N}, {OPTIONS}, epoch {EPOCH}: {K} items on each of W={W} ranks, {J} on each of W'={W1}, "
      f"then resumed on W''={W2}")
print(f"global order {short(order)}; taken on W ranks {short(interleaved(first))}, then on W' ranks "
      f"{short(interleaved(middle))}; the last ranks, interleaved: {short(got)}")
"""
)


def compared(promise: str, reading: str, expected: str, got: str) -> Snippet:
    """A promise that every rank's resumed passes are those of ``expected`` (words for each side)."""
    code = Template(SHOWN).safe_substitute(expected=expected, got=got)
    return Snippet(promise, code, reading=reading, imports=IMPORTS)


# Each invariant's readings, by words of the failing test's message that name them.
PARTS: dict[str, dict[str, Snippet]] = {
    "resume_at_boundaries": {
        "taken before the first item": compared(
            "a state taken before the first item of epoch EPOCH resumes that whole epoch.",
            AT_START,
            "uninterrupted",
            "resumed",
        ),
        "taken after the pass of epoch": compared(
            "a state taken after the pass of epoch EPOCH ended resumes at the next epoch, in full, and the one "
            "after it: each as the uninterrupted run yields it.",
            AT_END,
            "uninterrupted",
            "resumed",
        ),
    },
    "resumes_compose": {
        "then again": compared(
            "resumed after K items, then again J items later, each rank yields the rest that one resume after "
            "K + J items gives.",
            TWICE,
            "resumed once after K + J items",
            "resumed twice",
        ),
    },
    "elastic_hops_compose": {
        "from rank 0's state": Snippet(
            "resumed on W' ranks after K items on each of W, then on W'' after J more on each of W', the last ranks, "
            "interleaved, go on with the rest of the epoch's global order after both legs, then fewer than W'' "
            "padding items (with drop_last: a prefix of the whole order's rest, short of the epoch's rest by fewer "
            "than W'' items).",
            RESUME_SNIPPETS["elastic_cursor"].code,
            reading=CHAIN,
            imports=IMPORTS,
        ),
    },
}
# A part's draws besides those every resume's script reads (repro_snippets.snippet), by name.
DRAWS = {
    "first_k": FIRST_CHECKPOINT_LABEL,
    "between": BETWEEN_CHECKPOINTS_LABEL,
    "hop_j": MIDDLE_TAKEN_LABEL,
    "last_world": LAST_WORLD_LABEL,
}


def part_for(
    record: Mapping[str, Any], parts: Mapping[str, Mapping[str, Snippet]], draws: Mapping[str, Any]
) -> Snippet:
    """Of ``parts`` (readings by the words of the message that name them), the one the failing
    ``record`` names, ``draws`` (values by name) filled in; CannotReproduce where its message
    names none, or its record lacks a draw."""
    found = next((s for words, s in parts[record["flag"]].items() if words in record["message"]), None)
    if found is None:
        raise CannotReproduce(f"its message names no reading a script is written for: {record['message'][:120]}")
    texts = (found.promise, found.code, found.reading)
    lacking = sorted(name for name, value in draws.items() if value is None and any(f"${name}" in t for t in texts))
    if lacking:
        raise CannotReproduce(f"the failing test's record holds no {', '.join(lacking)}: nothing to build again")
    given = {name: value for name, value in draws.items() if value is not None}
    promise, code, reading = (Template(text).safe_substitute(given) for text in texts)
    return Snippet(promise, code, found.one_rank, found.global_order, reading, found.imports)


def first_parts(parts: Mapping[str, Mapping[str, Snippet]]) -> dict[str, Snippet]:
    """Each invariant's first reading: what it is covered by, before a record names its own."""
    return {flag: next(iter(readings.values())) for flag, readings in parts.items()}


COMPOSE_SNIPPETS = first_parts(PARTS)


def compose_part(record: Mapping[str, Any]) -> Snippet:
    """The reading of ``record``'s failure of :data:`PARTS`, its draws filled in."""
    return part_for(record, PARTS, {name: drawn(record, label) for name, label in DRAWS.items()})
