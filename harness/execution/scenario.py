"""Scenarios, as the rank pools run them, whatever the subject under test.

A scenario is a frozen dataclass: the spec of what is tested, the contract, the case, and
its own parameters. Its :meth:`Scenario.run` does the work of one rank and returns that
rank's reply; :meth:`Scenario.load` loads what it tests from the spec, once per process.
The subjects write their scenarios on this base (``harness.subjects.index_sampler.scenarios``).

Every call into what is tested goes through :meth:`RankContext.call`. It marks the process
as inside the sampler (a death there is the sampler's: ``RankSetup.watch``), notes when the
call began (``--rank-timeout`` bounds one call into one rank's sampler), and turns what the
sampler raises into :class:`StepFailed`, carrying the sampler's frames as evidence.

:func:`ask` sends each distinct request once per session: the tests of several invariants
draw the same cases from the one seed, and each judges its own invariant on the one reading
of a case. What it does with a sampler's fault is the pytest plugin's to say
(:func:`handle_faults_with`); nothing here imports Hypothesis or pytest.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn, Protocol, TypeVar

from sampler_conformance.core.case import Case
from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.evidence import FAULT, SamplerFault

from .blame import sampler_frames_in_exception
from .memory_budget import past_budget

T = TypeVar("T")


@dataclass(frozen=True)
class CallWatch:
    """Shared with the controller (``multiprocessing`` raw values): whether the process is
    inside a call into the sampler, since when, and which rank it is running."""

    in_sampler: Any  # RawValue("b"): 1 inside a call
    call_started: Any  # RawValue("d"): time.monotonic() when the latest call began
    rank: Any  # RawValue("i"): the rank being run (simulated ranks run in turn)
    # RawValue("b"): 1 while the rank waits in the suite's own collective, where a peer that
    # raised or died leaves it waiting: a consequence of that fault, not one of its own.
    in_collective: Any

    @classmethod
    def create(cls, context: Any) -> CallWatch:
        return cls(
            context.RawValue("b", 0), context.RawValue("d", 0.0), context.RawValue("i", 0), context.RawValue("b", 0)
        )


class StepFailed(Exception):
    """A call into the sampler (or the loader driving it) raised."""

    def __init__(self, rank: int, flag: str, summary: str, sampler_frames: tuple[str, ...]) -> None:
        super().__init__(summary)
        self.rank = rank
        self.flag = flag
        self.summary = summary
        self.sampler_frames = sampler_frames


class BadItems(Exception):
    """What the sampler yielded breaks the subject's own invariant :attr:`flag` (an item that
    is not an index, more items than the bound allows): found by the suite's reading."""

    flag: ClassVar[str]


def raised(exc: BaseException, step: str, who: str = "the sampler") -> str:
    """``the sampler raised ValueError while iterating: ...``: the words for a sampler's exception."""
    return f"{who} raised {type(exc).__name__} {step}: {str(exc) or '(no message)'}{past_budget(exc)}"


@dataclass(frozen=True)
class MeshPlace:
    """Where a rank of a device mesh runs (``harness.execution.mesh``): its process's place in
    the whole group, which the suite's collectives span, the group rank whose count speaks for
    each data coordinate, and the ``DeviceMesh``."""

    group_rank: int
    group_size: int
    speakers: tuple[int, ...]  # per data rank, the first group rank of its replica
    device_mesh: Any


@dataclass
class RankContext:
    """One rank running a scenario: who it is, what it tests, and where it runs. On a mesh,
    ``rank`` and ``world_size`` are its data coordinate and the data-parallel size, and
    ``mesh`` says where its process sits in the whole group."""

    rank: int
    world_size: int
    plug: Any  # what the scenario tests, as its load() gave it (the index sampler's: its SamplerPlug)
    watch: CallWatch
    backend: str | None = None  # the process group's; None: a simulated rank, no group
    epoch: int | None = None  # the epoch set last, for failure reports
    noun: str = "sampler"  # what is tested, in a fault's words: "the dataset raised ..."
    mesh: MeshPlace | None = None

    def __post_init__(self) -> None:
        self.watch.rank.value = self.rank if self.mesh is None else self.mesh.group_rank

    def call(self, what: str, work: Callable[[], T], *, into_sampler: bool = True) -> T:
        """Run one call into the sampler. ``into_sampler=False`` for calls into machinery
        that drives it (a DataLoader): their exceptions count against the sampler only
        when its frames are on the traceback."""
        self.watch.call_started.value = time.monotonic()
        self.watch.in_sampler.value = 1
        try:
            return work()
        except StepFailed:  # a call into the sampler inside machinery's call: blamed already
            raise
        except BadItems as exc:
            raise StepFailed(self.rank, exc.flag, f"the {self.noun} {exc}", ("(the items it yielded)",)) from exc
        except (Exception, KeyboardInterrupt, SystemExit) as exc:
            # A real Ctrl-C never reaches this process (it runs in its own process group):
            # KeyboardInterrupt and SystemExit here came from the sampler.
            frames = tuple(sampler_frames_in_exception(exc))
            if into_sampler and not frames:  # raised by the call itself, say len() of a float
                frames = (f"(the call into the {self.noun} {what})",)
            who = (
                f"the {self.noun}"
                if frames
                else f"the machinery driving the {self.noun} (no {self.noun} frame on the traceback)"
            )
            raise StepFailed(self.rank, FAULT, raised(exc, what, who), frames) from exc
        finally:
            self.watch.in_sampler.value = 0


@dataclass(frozen=True)
class Scenario:
    """One request: every rank runs it once (simulated ranks: once each, in turn)."""

    spec: str  # what is tested, MODULE:ATTR
    contract: Contract  # how to read it: finite or a prefix, indices or batches
    case: Case
    noun: ClassVar[str] = "sampler"  # what is tested, in a fault's words

    def load(self) -> Any:
        """What ``spec`` names, loaded in the rank's process (once per spec there): the
        subject's scenarios say how."""
        raise NotImplementedError

    def run(self, rank: RankContext) -> Any:
        """This rank's part; calls into the sampler go through ``rank.call``."""
        raise NotImplementedError

    def simulated_ranks(self) -> Sequence[int]:
        """The ranks the sampler process simulates for this scenario, in turn: every rank of
        the case, or those a partial reading reads (a case of 16,384 ranks at N = 2^31)."""
        return range(self.case.world_size)


class Ranks(Protocol):
    """Who runs a scenario: a real process group's rank pool, or the in-process sampler process."""

    # The world size of every case it runs (a real group's), or None where each case brings its
    # own and every rank is simulated.
    @property
    def world_size(self) -> int | None: ...

    # Whether the default process group is the data-parallel one, so that a sampler built from
    # it reads as a data rank: in a plain group, yes; on a device mesh, whose group spans every
    # dimension, no (built from it, a sampler takes the global rank for its data rank).
    @property
    def group_is_data_parallel(self) -> bool: ...

    # The ranks answering this request, by which ask() keeps their replies: these ranks
    # themselves, or, for ranks that stand for others in turn (a mesh drawn anew for each
    # example), the ones standing now.
    @property
    def answering(self) -> Any: ...

    def request(self, scenario: Scenario) -> list[Any]:
        """Every rank's reply, in rank order."""


def _raise(fault: SamplerFault) -> NoReturn:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    raise fault


# What ask() does with a sampler's fault: raise it, unless the pytest plugin installed its own.
_handle_fault: Callable[[SamplerFault], NoReturn] = _raise
_probing = 0  # > 0 inside probing(): the caller handles the sampler's faults itself


def handle_faults_with(handler: Callable[[SamplerFault], NoReturn]) -> None:
    """Have :func:`ask` hand a sampler's fault to ``handler``, which raises it or ends the
    example some other way. The plugin installs ``harness.pytest_plugin.crashes.set_aside_or_raise``
    at configure: a fault that is not the running test's own is set aside."""
    global _handle_fault
    _handle_fault = handler


@contextmanager
def probing() -> Iterator[None]:
    """A block that calls the sampler expecting it may fail, and catches the failure itself
    (to report a finding): its faults are raised to it, never handed to the handler."""
    global _probing
    _probing += 1
    try:
        yield
    finally:
        _probing -= 1


# Replies kept per ranks (a pool, or the sampler process), most recent last.
REPLIES_KEPT = 256
_replies: weakref.WeakKeyDictionary[Any, OrderedDict[Scenario, list[Any]]] = weakref.WeakKeyDictionary()


def ask(ranks: Ranks, scenario: Scenario) -> list[Any]:
    """Every rank's reply to ``scenario``. A sampler that raised is set aside when the running
    test judges another invariant (the handler the plugin installs), else its fault is raised.

    The same request is run once per session: every test draws its cases from the same seed,
    so the tests of several invariants draw the same cases, and each judges its own invariant
    on the one reading of the case (a sampler that changes between readings is judged by the
    scenarios that read it twice themselves). Faults are not kept: a request that failed is
    sent again."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    kept = _replies.setdefault(ranks.answering, OrderedDict())
    try:
        replies = kept[scenario]
    except KeyError:
        pass
    except TypeError:  # a request carrying something unhashable (a state dict): always sent
        return _send(ranks, scenario)
    else:
        kept.move_to_end(scenario)
        return replies
    replies = _send(ranks, scenario)
    kept[scenario] = replies
    if len(kept) > REPLIES_KEPT:
        kept.popitem(last=False)
    return replies


def _send(ranks: Ranks, scenario: Scenario) -> list[Any]:
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    try:
        return ranks.request(scenario)
    except SamplerFault as fault:
        if _probing:
            _raise(fault)
        _handle_fault(fault)
