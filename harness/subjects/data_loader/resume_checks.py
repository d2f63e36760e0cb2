"""The resume invariants of a data loader, as pure functions over a resumed run beside the
uninterrupted one (``runs.LoaderResume``, ``runs.LoaderResumeElsewhere``), each declared on its
check. A violation names the epoch, the cut, how the fresh loader was given its state, the
rank or the global batch where the runs part, and what each holds there."""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.comparing import first_difference
from sampler_conformance.core.evidence import Violation, shorten
from sampler_conformance.core.invariants import Declared, Invariant

from .checks import BAD, EVERYWHERE, SIMULATED
from .contracts import RESUMABLE, RESUMED_ON_OTHER_DP_SIZE
from .runs import LoaderCheckpoint, LoaderEpoch, LoaderResume, LoaderResumeElsewhere

RESUMABLE_UNDER = "data_loader+resumable"
ELSEWHERE_UNDER = "data_loader+elastic+resumable"
READINGS = ("the uninterrupted run", "the resumed one")
# The invariants of a resume, each declared on its check.
DECLARED = Declared()


def _batches(count: int) -> str:
    return f"{count} batch{'' if count == 1 else 'es'}"


def missing_protocol(flag: str, missing: tuple[str, ...]) -> list[Violation]:
    """The one violation of a loader without torch's Stateful protocol, for every resume invariant."""
    if not missing:
        return []
    return [
        Violation(
            flag,
            f"the loader has no {' and no '.join(f'{name}()' for name in missing)}, so no run can be resumed from "
            f"its checkpoint; a resumable loader has state_dict() and load_state_dict(state) (torch's Stateful "
            f"protocol), its state counting the batches read in the epoch",
            every_case=True,
        )
    ]


def _compare(flag: str, expected: LoaderEpoch, got: LoaderEpoch, what: str) -> list[Violation]:
    """Every rank reads the batches ``expected`` holds, in its order."""
    for rank, (a, b) in enumerate(zip(expected.batches, got.batches, strict=True)):
        if len(a) != len(b) or not all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)):
            return [Violation(flag, f"{what}: on rank {rank}, {first_difference(a, b, 'batch', READINGS)}")]
    return []


def _resumed_text(run: LoaderResume, order: str) -> str:
    """How the run was checkpointed and resumed; ``order`` names the calls, ``{hook}`` the epoch hook's."""
    e, hook = run.epoch, run.uninterrupted[0].hook
    return (
        f"checkpointed after {_batches(run.cut)} of epoch {e} (state_dict()), resumed in a fresh loader built with "
        f"the same arguments and given {order.format(hook=f'{hook}({e})' if hook else 'no epoch hook (it has none)')}"
    )


def _resume_invariant(flag: str, title: str, guards: str, bad: str, *, elsewhere: bool = False) -> Invariant:
    """A resume invariant, judged from orders (one instance cannot show them): on the same DP size
    on simulated ranks and in real groups, each rank resuming its own state in its own process; on
    another, on simulated ranks (every rank is given rank 0's state of another DP size)."""
    return Invariant(
        flag,
        title,
        guards,
        f"{BAD}:{bad}",
        proven_under=ELSEWHERE_UNDER if elsewhere else RESUMABLE_UNDER,
        where=SIMULATED if elsewhere else EVERYWHERE,
        judged_from=2,
        promised_by=(RESUMED_ON_OTHER_DP_SIZE if elsewhere else RESUMABLE,),
    )


def _each_order(flag: str, run: LoaderResume, epoch: int, what: str) -> list[Violation]:
    """Epoch ``epoch`` (0: e, 1: e + 1) of the resumed loaders, one per order of the epoch hook
    and load_state_dict, against the uninterrupted run's, batch for batch."""
    if run.missing:
        return missing_protocol(flag, run.missing)
    for order, *resumed in run.resumed:
        violations = _compare(flag, run.uninterrupted[epoch], resumed[epoch], f"{_resumed_text(run, order)}, {what}")
        if violations:
            return violations
    return []


@DECLARED(
    _resume_invariant(
        "loader_resume_continues",
        "a resume goes on with batch k + 1",
        "a resume offset on the wrong scale (this rank's instances read as the whole job's, olmo-core's count of "
        "tokens processed), or a state that forgets the epoch and resumes into another epoch's order: batches "
        "trained twice or never",
        "CountsRankInstancesAsGlobal",
    )
)
def check_resume_continues(run: LoaderResume) -> list[Violation]:
    """The k batches before the checkpoint and the resumed loader's rest of epoch e together
    are the uninterrupted epoch, batch for batch, on every rank, whichever order the fresh
    loader was given its epoch hook and its state in."""
    return _each_order("loader_resume_continues", run, 0, f"epoch {run.epoch} differs")


@DECLARED(
    _resume_invariant(
        "loader_epoch_after_resume",
        "the epoch after a resume is whole",
        "the offset of a resume applied to every later epoch too, so that each is cut short "
        "(NVIDIA-NeMo/Megatron-Bridge #4565, huggingface/datasets #7447)",
        "SkipOutlivesEpoch",
    )
)
def check_epoch_after_resume(run: LoaderResume) -> list[Violation]:
    """Epoch e + 1 of the resumed loader, after its epoch hook, is the uninterrupted run's, batch for batch."""
    return _each_order("loader_epoch_after_resume", run, 1, f"its epoch {run.epoch + 1} differs")


@DECLARED(
    _resume_invariant(
        "loader_resume_on_other_dp_size",
        "a resume on another DP size goes on with the same global batches",
        "a state that counts this rank's instances (torchdata's StatefulDistributedSampler: the same world size "
        "only): resumed on another number of ranks, it skips too many global batches or too few",
        "StateCountsRankInstances",
        elsewhere=True,
    )
)
def check_resume_on_other_dp_size(run: LoaderResumeElsewhere) -> list[Violation]:
    """Global batch g of the resumed run, every new rank's batch g together, holds the
    instances of the uninterrupted run's global batch k + g, to the epoch's end."""
    flag = "loader_resume_on_other_dp_size"
    if run.missing:
        return missing_protocol(flag, run.missing)
    expected, got = run.uninterrupted, run.resumed
    case = got.case
    what = (
        f"checkpointed after {_batches(run.cut)} of epoch {case.epoch} at DP size W={run.saved_on}, rank 0's "
        f"state_dict() loaded into every rank at W={case.world_size}"
    )
    left = max(max(map(len, expected.batches), default=0) - run.cut, max(map(len, got.batches), default=0))
    for resumed_step in range(left):
        step = run.cut + resumed_step
        a, b = expected.global_batch(step), got.global_batch(resumed_step)
        if not np.array_equal(a, b):
            return [
                Violation(
                    flag,
                    f"{what}: global batch {step} holds {shorten(a)} in the uninterrupted run and {shorten(b)} in "
                    f"the resumed one (its global batch {resumed_step})",
                )
            ]
    return []


@DECLARED(
    Invariant(
        "loader_plain_state",
        "the state is plain data",
        "a state that torch.load(weights_only=True), torch's default since 2.6, refuses (numpy scalars, "
        "generators, objects): a checkpoint the trainer saves and cannot load",
        f"{BAD}:CountsInNumpy",
        proven_under=RESUMABLE_UNDER,
        where=SIMULATED,  # a property of each rank's state alone: no group shows more
        promised_by=(RESUMABLE,),
    )
)
def check_plain_state(run: LoaderCheckpoint) -> list[Violation]:
    """Every rank's state_dict() after k batches went through torch.save and torch.load(weights_only=True)."""
    flag = "loader_plain_state"
    if run.missing:
        return missing_protocol(flag, run.missing)
    return [
        Violation(
            flag,
            f"rank {rank}: state_dict() after {_batches(run.cut)} of epoch {run.before.case.epoch} does not load "
            f"with torch.load(weights_only=True) once saved, as trainers load checkpoints ({why}); a loader's "
            f"state must hold plain data: ints, floats, strings, tensors, and lists, tuples and dicts of them",
        )
        for rank, why in run.not_plain[:1]
    ]
