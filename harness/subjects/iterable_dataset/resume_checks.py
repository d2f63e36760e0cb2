"""The resumable streaming invariants, as pure functions over a run interrupted by
checkpoints beside the uninterrupted one (``runs.StreamResume``).

A resumed run is right when every rank yields what the uninterrupted run yields, batch for
batch: whatever the contract's own rule for an epoch (exact, padded or truncated), a resume
must not change it. A violation names the rank, the first batch where the runs part, and
what the whole epoch gained or lost across the ranks.
"""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.counting import index_counts
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Declared, Invariant, Where

from .checks import BAD
from .contracts import RESUMABLE
from .runs import StreamEpoch, StreamResume

RESUMABLE_UNDER = "stream+resumable"
LOADER = ("torchdata",)  # torchdata's StatefulDataLoader resumes the stream
# The invariants of a resume, each declared on its check.
DECLARED = Declared()


def _batches(count: int) -> str:
    return f"{count} batch{'' if count == 1 else 'es'}"


_TRIP = "loader.state_dict() through torch.save and torch.load(weights_only=True)"


def resumed_once_text(run: StreamResume) -> str:
    """How the run was checkpointed and resumed (a rank with fewer batches left checkpoints after its last one)."""
    e = run.epoch
    if run.first_cut is None:
        return (
            f"checkpointed at the end of epoch {e} ({_TRIP}), resumed in a fresh dataset and StatefulDataLoader "
            f"(load_state_dict(state), set_epoch({e + 1}))"
        )
    return (
        f"checkpointed after {_batches(run.first_cut)} of epoch {e} ({_TRIP}), resumed in a fresh dataset and "
        f"StatefulDataLoader (load_state_dict(state), set_epoch({e}))"
    )


def resumed_twice_text(run: StreamResume) -> str:
    """How the run was checkpointed and resumed twice."""
    epoch = run.resumed_epoch.case.epoch
    return f"{resumed_once_text(run)}, checkpointed again after {_batches(run.second_cut)} of epoch {epoch} and resumed again"


def _gained_and_lost(expected: StreamEpoch, got: StreamEpoch) -> str:
    """What the epoch gained and lost, all ranks together: ``2 ids yielded more often ([4, 7]), none less often``."""
    n = expected.case.dataset_size
    due = index_counts([expected.observation], n)
    came = index_counts([got.observation], n)
    extra, missing = np.flatnonzero(came > due), np.flatnonzero(came < due)

    def listed(ids: np.ndarray, what: str) -> str:
        return f"{ids.size} ids {what} ({shorten(ids)})" if ids.size else f"none {what}"

    return f"{listed(extra, 'yielded more often')}, {listed(missing, 'less often')}"


def compare_epochs(flag: str, expected: StreamEpoch, got: StreamEpoch, what: str) -> list[Violation]:
    """Every rank yields the batches ``expected`` holds, in its order."""
    expected_batches = expected.observation.batches or ()
    got_batches = got.observation.batches or ()
    readings = ("the uninterrupted run", "the resumed one")
    for rank, (a, b) in enumerate(zip(expected_batches, got_batches, strict=True)):
        if len(a) != len(b) or not all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)):
            return [
                Violation(
                    flag,
                    f"rank {rank}: {what}; {first_difference(a, b, 'batch', readings)}. All ranks together, "
                    f"beside the uninterrupted epoch: {_gained_and_lost(expected, got)}",
                )
            ]
    return []


def check_stateful(run: StreamResume, flag: str) -> list[Violation]:
    """The one violation of a dataset without torch's Stateful protocol, for every resume invariant."""
    if not run.missing:
        return []
    return [
        Violation(
            flag,
            f"the dataset has no {' and no '.join(f'{name}()' for name in run.missing)}: a resumable dataset has "
            f"state_dict() and load_state_dict(state) (torch's Stateful protocol), which StatefulDataLoader calls "
            f"in each reader. Without them the loader fast-forwards it, re-reading every batch taken before the "
            f"checkpoint, and torchdata 0.11's fast-forward skips batches on a second resume "
            f"(docs/streaming-datasets.md, 'Resume')",
        )
    ]


@DECLARED(
    Invariant(
        "stream_resume_continues",
        "a resume continues the epoch",
        "a loaded state the dataset ignores or restores only in part, so that the resumed run restarts its "
        "epoch, repeating what was trained on, or skips part of it (mosaicml/streaming #437: restarts from "
        "scratch despite load_state_dict)",
        f"{BAD}:IgnoresLoadedState",
        proven_under=RESUMABLE_UNDER,
        where=Where.GROUPS,
        packages=LOADER,
        promised_by=(RESUMABLE,),
    )
)
def check_resume_continues(run: StreamResume) -> list[Violation]:
    """The batches before checkpoint 1 and the resumed run's rest of epoch e together are the
    uninterrupted epoch, batch for batch."""
    flag = "stream_resume_continues"
    return check_stateful(run, flag) or compare_epochs(
        flag,
        run.uninterrupted[0],
        run.resumed_once,
        f"{resumed_once_text(run)}, epoch {run.epoch} differs from the uninterrupted one",
    )


@DECLARED(
    Invariant(
        "stream_resumes_compose",
        "a resumed run resumes again",
        "a resumed run whose checkpoints hold a stale, zero-initialized state, so that the second resume "
        "restarts the stream from its beginning (pytorch/torchtitan #3907, huggingface/datasets #8308)",
        f"{BAD}:StaleStateAfterResume",
        proven_under=RESUMABLE_UNDER,
        where=Where.GROUPS,
        packages=LOADER,
        promised_by=(RESUMABLE,),
    )
)
def check_resumes_compose(run: StreamResume) -> list[Violation]:
    """Resumed from checkpoint 2, taken by the resumed run: still the uninterrupted epoch."""
    flag = "stream_resumes_compose"
    return check_stateful(run, flag) or compare_epochs(
        flag,
        run.resumed_epoch,
        run.resumed_twice,
        f"{resumed_twice_text(run)}, epoch {run.resumed_epoch.case.epoch} differs from the uninterrupted one",
    )


@DECLARED(
    Invariant(
        "stream_epoch_after_resume",
        "the epoch after a resume is whole",
        "the offset of a resume applied to later epochs too, so that every epoch after it is cut short "
        "(huggingface/datasets #7447), or a state taken at an epoch's end that empties the next epoch "
        "(meta-pytorch/data #1437)",
        f"{BAD}:OffsetOutlivesEpoch",
        proven_under=RESUMABLE_UNDER,
        where=Where.GROUPS,
        packages=LOADER,
        promised_by=(RESUMABLE,),
    )
)
def check_epoch_after_resume(run: StreamResume) -> list[Violation]:
    """The epoch after the resumed one is the uninterrupted run's, batch for batch."""
    flag = "stream_epoch_after_resume"
    return check_stateful(run, flag) or compare_epochs(
        flag,
        run.uninterrupted[1],
        run.after,
        f"{resumed_once_text(run)}, epoch {run.epoch + 1} of the resumed loader differs from the uninterrupted run's",
    )


@DECLARED(
    Invariant(
        "stream_plain_state",
        "the state is plain data",
        "a state that torch.load(weights_only=True) refuses (numpy scalars, generators, objects): a checkpoint "
        "that a trainer loading safely cannot load",
        f"{BAD}:NumpyPosition",
        proven_under=RESUMABLE_UNDER,
        where=Where.GROUPS,
        packages=LOADER,
        promised_by=(RESUMABLE,),
    )
)
def check_plain_state(run: StreamResume) -> list[Violation]:
    """Every checkpoint's state went through torch.save and torch.load(weights_only=True)."""
    if run.missing or run.not_plain is None:
        return check_stateful(run, "stream_plain_state")
    return [
        Violation(
            "stream_plain_state",
            f"{resumed_twice_text(run)}: a state does not load with torch.load(weights_only=True), as trainers load "
            f"checkpoints ({run.not_plain}); the dataset's state_dict() must hold plain data: ints, floats, "
            f"strings, tensors, and lists, tuples and dicts of them",
        )
    ]
