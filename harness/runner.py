"""In-process runner: simulate W ranks with W sampler objects in this process.

Every call into the sampler goes through :func:`on_rank`, so a sampler that raises or
yields garbage becomes one readable :class:`SamplerFault` naming the rank, the step and
the case. Each observation runs in a watchdog thread with a time bound, so a sampler
that blocks can fail the test but never hang the suite.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from .case import Case, Observation
from .contracts import TORCH, Contract
from .crashes import set_aside_or_raise
from .dataset import IndexDataset
from .plug import SamplerPlug
from .strategies import draw_case
from .reading import BadIndex, read_pass
from .verdict import SamplerFault, SamplerHang, Violation

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0


@dataclass
class _Limits:
    timeout_s: float = DEFAULT_TIMEOUT_S  # for one call into one rank's sampler
    # The first case a sampler hung on. A hung watchdog thread cannot be killed, so
    # later cases fail at once instead of piling up more stuck threads.
    hung_case: Case | None = None
    # What the sampler was doing last ("rank 3 while iterating"), for the hang report,
    # and when that call began: the time bound runs from there.
    progress: str = ""
    call_started: float = 0.0


LIMITS = _Limits()


def configure(timeout_s: float) -> None:
    LIMITS.timeout_s = timeout_s
    LIMITS.hung_case = None


FAULT = "sampler fault"  # title for a sampler that raises or hangs: no invariant can be judged


def _fault(rank: int | None, message: str, case: Case, flag: str = FAULT) -> SamplerFault:
    who = f"rank {rank}: " if rank is not None else ""
    return SamplerFault([Violation(flag, who + message)], case)


def raised(exc: BaseException, step: str) -> str:
    """``the sampler raised ValueError while iterating: ...``: the words for a sampler's exception."""
    return f"the sampler raised {type(exc).__name__} {step}: {str(exc) or '(no message)'}"


def on_rank(rank: int | None, step: str, case: Case, call: Callable[[], T]) -> T:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    LIMITS.progress = f"rank {rank} {step}" if rank is not None else step
    LIMITS.call_started = time.monotonic()
    try:
        return call()
    except BadIndex as exc:
        raise _fault(rank, f"the sampler {exc}", case, flag="valid_indices") from None
    except Exception as exc:
        raise _fault(rank, raised(exc, step), case) from exc
    except (KeyboardInterrupt, SystemExit) as exc:
        # Python delivers a real Ctrl-C to the main thread only: raised in the watchdog
        # thread, it came from the sampler, and is its fault, not a reason to stop the run.
        if threading.current_thread() is threading.main_thread():
            raise
        raise _fault(rank, raised(exc, step), case) from exc


def build_samplers(plug: SamplerPlug, case: Case, contract: Contract = TORCH) -> list[Any]:
    """One sampler per rank, with explicit ``num_replicas``/``rank``; set_epoch if the case says."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    dataset = IndexDataset(case.dataset_size)
    options = case.sampler_options(yields_batches=contract.yields_batches)
    samplers = []
    for rank in range(case.world_size):
        sampler = on_rank(
            rank,
            "in its constructor",
            case,
            lambda: plug.build(dataset, case.world_size, rank, **options),
        )
        samplers.append(sampler)
    if case.epoch is not None:
        set_epoch_all(samplers, case)
    return samplers


def has_set_epoch(sampler: Any) -> bool:
    return callable(getattr(sampler, "set_epoch", None))


def set_epoch_all(samplers: Sequence[Any], case: Case) -> None:
    """Call ``set_epoch(case.epoch)`` on every rank, as a training loop does each epoch."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    for rank, sampler in enumerate(samplers):
        if not has_set_epoch(sampler):
            raise _fault(
                rank,
                "the sampler has no set_epoch() method; training loops call it every epoch to reshuffle",
                case,
                flag="reshuffles_on_set_epoch",
            )
        on_rank(rank, f"in set_epoch({case.epoch})", case, lambda: sampler.set_epoch(case.epoch))


def read_samplers(samplers: Sequence[Any], case: Case, contract: Contract = TORCH) -> Observation:
    """Iterate every rank's sampler once (a finite prefix of an endless one) and take ``len()``."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    readings = [
        read_pass(s, contract, case.dataset_size, case.world_size, lambda step, call: on_rank(r, step, case, call))
        for r, s in enumerate(samplers)
    ]
    batches = tuple(r.batches for r in readings) if contract.yields_batches else None
    return Observation(
        case=case,
        indices=tuple(r.indices for r in readings),
        reported_lengths=tuple(r.length for r in readings),
        batches=batches,
    )


def observe(plug: SamplerPlug, case: Case, contract: Contract = TORCH) -> Observation:
    """Build fresh samplers for every rank of ``case`` and read them once, with a time bound."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return bounded(case, lambda: read_samplers(build_samplers(plug, case, contract), case, contract))


def _sampler_stack(frame: Any) -> str:
    """The hung thread's stack from the first frame outside the harness and threading."""
    if frame is None:
        return "(no stack)\n"
    frames = traceback.extract_stack(frame)
    harness_dir = str(Path(__file__).parent)
    outside = [i for i, f in enumerate(frames) if not f.filename.startswith(harness_dir) and "threading" not in f.filename]
    return "".join(traceback.format_list(frames[outside[0]:] if outside else frames))


def observe_drawn(data: Any, plug: SamplerPlug, contract: Contract, *, drop_last: bool, **draw: Any) -> Observation:
    """Draw a case for ``plug`` under ``contract`` (``draw`` as for draw_case) and observe it."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    return observe(plug, draw_case(data, plug, drop_last=drop_last, contract=contract, **draw), contract)


def bounded(case: Case, work: Callable[[], T]) -> T:
    """Run ``work`` in a watchdog thread; fail with its stack if it takes too long."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    if LIMITS.hung_case is not None:
        raise SamplerHang(
            [Violation(FAULT, f"the sampler hung earlier in this session on case {LIMITS.hung_case.describe()}; "
                       f"later cases are not run so that the suite stays bounded")],
            case,
        )
    outcome: dict[str, Any] = {}

    def target() -> None:
        __tracebackhide__ = True
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed back to the calling thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="sampler-under-test", daemon=True)
    LIMITS.call_started = time.monotonic()
    thread.start()
    # --rank-timeout bounds each call into one rank's sampler, not the W ranks together:
    # wait until the call under way has run that long.
    while thread.is_alive():
        remaining = LIMITS.call_started + LIMITS.timeout_s - time.monotonic()
        if remaining <= 0:
            break
        thread.join(remaining)
    if thread.is_alive():
        LIMITS.hung_case = case
        frame = sys._current_frames().get(thread.ident or -1)
        raise SamplerHang(
            [Violation(FAULT, f"{LIMITS.progress or 'the sampler'}: did not finish within {LIMITS.timeout_s:g} s "
                       f"(--rank-timeout); it hangs. Its stack:\n{_sampler_stack(frame)}")],
            case,
        )
    if isinstance(outcome.get("error"), SamplerFault):
        set_aside_or_raise(outcome["error"])
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
