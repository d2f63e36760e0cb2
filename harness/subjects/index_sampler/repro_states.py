"""The resumable invariants of the state itself, as a reproduction script asserts them
(``+resumable``): it is plain data that goes through a checkpoint and does not depend on the
global RNGs (``plain_state``), and a sampler refuses one saved under other arguments
(``stale_state_refused``) or another world size (``other_world_size_refused``); the protocols
of ``scenarios/resume.py`` (``Resume``, ``LoadForeignState``) in plain Python, and the promise
that failed, as ``resume_checks.py`` and ``properties/test_resume.py`` say it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.subjects.common.repro_script import drawn

from .repro_compose import DIFFERING, STEPS, UNINTERRUPTED, compared, first_parts, part_for
from .repro_resume import CARRIED, IMPORTS
from .repro_snippets import Snippet
from .resume_labels import CHANGED_LABEL, OTHER_SEED_LABEL, OTHER_SIZE_LABEL, OTHER_WORLD_LABEL

# Each rank's state after its first k items (no further than its pass), through a checkpoint.
THROUGH = (
    """K = $k  # items each rank read before its checkpoint (as drawn)
"""
    + UNINTERRUPTED
    + """print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, each rank's state through torch.save and torch.load(weights_only=True)")
refused = []
for r in range(W):
    taken = min(K, len(passes(fresh(r), r, [EPOCH])[0]))  # no checkpoint goes past the rank's pass
    sampler = fresh(r)
    set_epoch(sampler, EPOCH)
    take(sampler, taken)
    state = sampler.state_dict()
    _, why = through_checkpoint(state)  # as a checkpoint is loaded: plain data only
    if why:
        refused.append(f"rank {r}: {why}")
    print(f"rank {r}: state_dict() after {taken} items of epoch {EPOCH}: {str(state)[:200]}")
"""
)
# Each rank resumed after k items twice, the global RNGs seeded otherwise before the second resume.
RESEEDED = (
    """K = $k  # items each rank read before its checkpoint (as drawn)
"""
    + STEPS
    + """EPOCHS = [EPOCH]
lengths = [len(passes(fresh(r), r, EPOCHS)[0]) for r in range(W)]
expected = [passes(resumed(r, [min(K, n)])[1], r, EPOCHS) for r, n in enumerate(lengths)]
resumed_passes = [passes(resumed(r, [min(K, n)], seed=GLOBAL_SEED + 1)[1], r, EPOCHS) for r, n in enumerate(lengths)]
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, epoch {EPOCH} resumed after {K} items, the global RNGs seeded with "
      f"{GLOBAL_SEED}, then with {GLOBAL_SEED + 1}, before the resume")
"""
    + DIFFERING
)
# Each rank's sampler that loaded a just-built sampler's state, read as one that loaded nothing.
FRESH_STATE = (
    STEPS
    + """EPOCHS = [EPOCH, EPOCH + 1]
expected = [passes(fresh(r), r, EPOCHS) for r in range(W)]
resumed_passes = []
for r in range(W):
    state, _ = through_checkpoint(fresh(r).state_dict())  # before set_epoch and any item
    sampler = fresh(r)
    sampler.load_state_dict(state)
    resumed_passes.append(passes(sampler, r, EPOCHS))
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, a fresh sampler loaded the state of another just built")
"""
    + DIFFERING
)
# Rank 0 takes k items of the epoch and saves; rank 0 built with other arguments loads the state.
FOREIGN = (
    """K = $k  # items rank 0 read before its checkpoint (as drawn)
OTHER_N, OTHER_W, OTHER_OPTIONS = $other_n, $other_w, $other_options  # the resumed run's: $changed


"""
    + CARRIED
    + """def rank_0(n, world, options):
    sampler = Sampler(range(n), $world_size_name=world, rank=0, **options)
    set_epoch(sampler, EPOCH)
    return sampler


here = take(rank_0(N, W, OPTIONS), LIMIT + 1)
there = take(rank_0(OTHER_N, OTHER_W, OTHER_OPTIONS), LIMIT + 1)
saved = rank_0(N, W, OPTIONS)
taken = take(saved, K)
state, _ = through_checkpoint(saved.state_dict())
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}: rank 0 saved {str(state)[:200]} after {short(taken)} of epoch {EPOCH}")
print(f"rank 0's pass of epoch {EPOCH}: {short(here)}; under N={OTHER_N}, W={OTHER_W}, {OTHER_OPTIONS}: {short(there)}")
stale = rank_0(OTHER_N, OTHER_W, OTHER_OPTIONS)
refusal, step, first = None, "load_state_dict(state)", None
try:
    stale.load_state_dict(state)
    step = "set_epoch and the first item"
    set_epoch(stale, EPOCH)
    first = next(iter(stale), None)
except Exception as exc:  # any refusal will do
    refusal = f"{type(exc).__name__} in {step}: {exc}"
print(f"refused: {refusal}" if refusal else f"loaded, and the pass went on (its next item: {first})")
"""
)
FOREIGN_CODE = (
    "broken = refusal is None and bool(taken) and here != there\n"
    'shown = f"rank 0 of N={OTHER_N}, W={OTHER_W}, {OTHER_OPTIONS} loaded the state of rank 0 of N={N}, W={W}, '
    '{OPTIONS} without an error (its next item: {first}), where its own pass is {short(there)}"'
)

JUST_BUILT = compared(
    "loading the state of a sampler just built changes nothing: each rank yields the epochs of one that loaded "
    "nothing.",
    FRESH_STATE,
    "loaded nothing",
    "loaded a just-built sampler's state",
)
PARTS: dict[str, dict[str, Snippet]] = {
    "plain_state": {
        "cannot go through torch.save": Snippet(
            "the state goes through torch.save and torch.load(weights_only=True), as a checkpoint carries it: "
            "dicts, lists, numbers, strings, tensors.",
            'broken = bool(refused)\nshown = "; ".join(refused[:1])',
            reading=THROUGH,
            imports=IMPORTS,
        ),
        "reseeded between the two": compared(
            "a resume does not depend on the global RNGs: reseeded otherwise before it, each rank yields the same rest.",
            RESEEDED,
            "the global RNGs as before",
            "reseeded",
        ),
        "just built": JUST_BUILT,
        "just-built": JUST_BUILT,
    },
    "stale_state_refused": {
        "another": Snippet(
            "a state saved under other arguments (here: $changed) raises at load_state_dict or at the first item, "
            "where rank 0's pass of the epoch differs under them.",
            FOREIGN_CODE,
            reading=FOREIGN,
            imports=("io", "torch"),
        ),
    },
    "other_world_size_refused": {
        "was loaded by": Snippet(
            "a sampler that is not elastic refuses a state saved under another world size, at load_state_dict or at "
            "the first item, where rank 0's pass of the epoch differs on it.",
            FOREIGN_CODE,
            reading=FOREIGN,
            imports=("io", "torch"),
        ),
    },
}

STATE_SNIPPETS = first_parts(PARTS)


def _changed(record: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments rank 0 loaded a foreign state under, as the script writes them: N, W, its
    options (the one changed), and in words."""
    if record["flag"] == "other_world_size_refused":
        return {
            "other_n": "N",
            "other_w": drawn(record, OTHER_WORLD_LABEL),
            "other_options": "OPTIONS",
            "changed": "another world size",
        }
    case, changed = record["parameters"], drawn(record, CHANGED_LABEL)
    flipped = {
        "shuffle": not case["shuffle"],
        "drop_last": not case["drop_last"],
        "seed": drawn(record, OTHER_SEED_LABEL),
    }
    size = drawn(record, OTHER_SIZE_LABEL) if changed == "dataset size" else "N"
    if changed not in (*flipped, "dataset size") or size is None or flipped.get(changed, 0) is None:
        raise CannotReproduce(f"the failing test's record does not say which argument changed ({changed})")
    options = f"{{**OPTIONS, {changed!r}: {flipped[changed]!r}}}" if changed in flipped else "OPTIONS"
    return {"other_n": size, "other_w": "W", "other_options": options, "changed": f"another {changed}"}


def state_part(record: Mapping[str, Any]) -> Snippet:
    """The reading of ``record``'s failure of :data:`PARTS`, its draws filled in."""
    return part_for(record, PARTS, {} if record["flag"] == "plain_state" else _changed(record))
