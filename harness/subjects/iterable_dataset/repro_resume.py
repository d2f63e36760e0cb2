"""What a streaming dataset's reproduction script (``repro.py``) reads and asserts for the
``+resumable`` protocol (``resume.py``): every rank's dataset read through torchdata's
``StatefulDataLoader``, uninterrupted for epochs e and e + 1, then checkpointed after k
batches of epoch e (or at its end), each state carried through ``torch.save`` and
``torch.load(weights_only=True)``, resumed in a fresh dataset and loader, checkpointed again
after k' more batches and resumed again, as the test read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sampler_conformance.subjects.common.repro_script import THROUGH_CHECKPOINT, drawn

from .case import StreamCase
from .repro_snippets import Snippet, until_raised

FIRST_CUT = "k (batches before checkpoint 1)"
SECOND_CUT = "k' (batches after resuming it, before checkpoint 2)"


def _cuts(case: StreamCase, record: Mapping[str, Any]) -> tuple[StreamCase, dict[str, Any]]:
    """The epoch and the two cuts the test drew; the fixed case (no draws) checkpoints after one
    batch of epoch 0, and again after one more."""
    if not record.get("draws"):
        return case.with_(epoch=0), {"FIRST_CUT": 1, "SECOND_CUT": 1}
    epoch = drawn(record, "epoch")
    cuts = {"FIRST_CUT": drawn(record, FIRST_CUT), "SECOND_CUT": drawn(record, SECOND_CUT)}
    return case.with_(epoch=case.epoch if epoch is None else epoch), cuts


# The reading's functions: the runs of a rank, uninterrupted and resumed.
READ_RUNS = (
    """from torchdata.stateful_dataloader import StatefulDataLoader


def stateful(rank, state=None):
    \"\"\"A fresh dataset for rank ``rank`` and a StatefulDataLoader over it, given ``state`` if any.\"\"\"
    dataset = build(rank)
    generator = torch.Generator().manual_seed(LOADER_SEEDS[rank])
    loader = StatefulDataLoader(dataset, collate_fn=collate, generator=generator, **LOADER)
    if state is not None:
        loader.load_state_dict(state)
    return dataset, loader


def take(batches, count=None):
    \"\"\"The ids of the next ``count`` batches (None: to the epoch's end) of a loader or its iterator.\"\"\"
    return [[item_id(i) for i in items] for _, items in itertools.islice(batches, LIMIT + 1 if count is None else count)]


def set_epoch(dataset, epoch):
    if callable(getattr(dataset, "set_epoch", None)):
        dataset.set_epoch(epoch)


def started(rank, state, epoch):
    \"\"\"A fresh dataset and loader (given ``state``, if any), set to ``epoch``, and the loader's iterator.\"\"\"
    dataset, loader = stateful(rank, state)
    set_epoch(dataset, epoch)
    return dataset, loader, iter(loader)


"""
    + THROUGH_CHECKPOINT
    + """


def checkpoint(loader):
    \"\"\"loader.state_dict() as a checkpoint file carries it; where it cannot, the state itself and why.\"\"\"
    return through_checkpoint(loader.state_dict())


def runs(rank):
    \"\"\"Rank ``rank``'s epochs EPOCH and EPOCH + 1 uninterrupted, and as the resumed runs read them.\"\"\"
    dataset, loader = stateful(rank)
    whole = []
    for epoch in (EPOCH, EPOCH + 1):
        set_epoch(dataset, epoch)
        whole.append(take(loader))
    ended = FIRST_CUT is None  # checkpoint 1 at the end of epoch EPOCH: the resumed epoch is the next
    _, loader, batches = started(rank, None, EPOCH)
    first = take(batches, None if ended else min(FIRST_CUT, len(whole[0])))
    state1, why1 = checkpoint(loader)
    del batches, loader  # the interrupted run's workers stop here
    dataset, loader, batches = started(rank, state1, EPOCH + ended)
    resumed = take(batches, min(SECOND_CUT, len(whole[ended]) - (0 if ended else len(first))))
    state2, why2 = checkpoint(loader)
    rest = take(batches)
    if not ended:
        set_epoch(dataset, EPOCH + 1)
    after = resumed + rest if ended else take(loader)
    del batches, loader
    again = take(started(rank, state2, EPOCH + ended)[2])
    once = first if ended else first + resumed + rest
    return whole, once, ([] if ended else first) + resumed + again, after, why1 or why2


warnings.filterwarnings("ignore", message=".*set_vital.*")  # torchdata 0.11 calls it, deprecated in torch
print(f"{SPEC}: N={N}, W={W}, {OPTIONS}, StatefulDataLoader({LOADER})")
print(f"checkpoint 1 after {FIRST_CUT} batches of epoch {EPOCH} (None: at its end), checkpoint 2 after {SECOND_CUT} more")
"""
)
# Every rank's runs, compared by the promise's code.
RESUMED = (
    READ_RUNS
    + """ranks = [runs(r) for r in range(W)]
ended = FIRST_CUT is None
for r, (whole, once, twice, after, why) in enumerate(ranks):
    print(f"rank {r}: uninterrupted {short(whole[0])}, then {short(whole[1])}")
    print(f"  resumed once {short(once)}; twice {short(twice)}; the epoch after {short(after)}")
"""
)


def _compared(expected: str, got: str) -> str:
    """The promise's code: every rank's resumed batches (``got``) are the uninterrupted ones (``expected``)."""
    return (
        f"parted = [(r, {expected}, {got}) for r, (whole, once, twice, after, why) in enumerate(ranks)]\n"
        "r, expected, got = next((p for p in parted if p[1] != p[2]), parted[0])\n"
        "broken = expected != got\n"
        'shown = f"rank {r}: batches {short(expected)} uninterrupted, {short(got)} resumed"'
    )


def _resumed(promise: str, code: str) -> Snippet:
    return Snippet(promise, code, reading=RESUMED, imports=("io", "warnings"), setup=_cuts)


# ... each rank's runs in turn, up to the first that raises: its exception is the fault, its traceback printed.
RESUMED_UNTIL_RAISED = READ_RUNS + until_raised(
    "whole, once, twice, after, why = runs(r)",
    'print(f"rank {r}: uninterrupted {short(whole[0])}, then {short(whole[1])}; resumed once {short(once)}")',
    fault="the dataset's own: built, set to its epoch, read, checkpointed or resumed",
)
# stream_runs where a resume test's dataset raised: the runs that test read, through StatefulDataLoader.
RESUMED_FAULT = Snippet(
    "every rank's dataset is built, read, checkpointed and resumed through its StatefulDataLoader without raising.",
    "broken = bool(fault)\nshown = fault",
    reading=RESUMED_UNTIL_RAISED,
    imports=("io", "warnings", "traceback"),
    setup=_cuts,
)


RESUME_SNIPPETS = {
    "stream_resume_continues": _resumed(
        "resumed after the cut, the batches before it and the rest are the uninterrupted epoch, batch for batch.",
        _compared("whole[0]", "once"),
    ),
    "stream_resumes_compose": _resumed(
        "resumed, checkpointed again and resumed again, the epoch is still the uninterrupted one, batch for batch.",
        _compared("whole[ended]", "twice"),
    ),
    "stream_epoch_after_resume": _resumed(
        "the resumed loader's next epoch is the uninterrupted one, batch for batch.",
        _compared("whole[1]", "after"),
    ),
    "stream_plain_state": _resumed(
        "both checkpoints, the dataset's states within them, go through torch.save and torch.load(weights_only=True).",
        "refused = [(r, why) for r, (*_, why) in enumerate(ranks) if why]\n"
        "broken = bool(refused)\n"
        'shown = f"rank {refused[0][0]}: {refused[0][1]}" if refused else ""',
    ),
}
