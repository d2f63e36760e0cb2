"""One crash is one finding.

A sampler that raises on some cases (say N = 0) breaks one invariant for it, `edge_sizes`
("runs without crashing"), with the smallest case it crashed on. Every other invariant is
judged on the cases where it did not crash: inside a Hypothesis test, a fault that is not
the running test's own business is set aside and the example rejected, so Hypothesis draws
another. When the test ends, the plugin charges the smallest case set aside to the
invariant its violation names (edge_sizes for a crash, valid_indices for items that are not
indices); a test whose every example was set aside has judged nothing, and its invariant is
"not judged".

An example that ran to the end judged its invariant only if it could have failed it: every
observation ``expect_holds`` finds held is handed to :func:`note_judged` (installed at
configure with ``harness.core.evidence.note_judged_with``), and an example whose observations
all read fewer items than the invariant's ``judged_from`` (an empty epoch, or one item where
an order is compared) is counted apart, toward no floor, and rejected as :func:`judge_only_if`
rejects one, so that Hypothesis draws another in its place: a conforming sampler reaches the
floor however many empty cases the draws hold. A test that never calls ``expect_holds``
counts every example that ran to the end.

Hangs and deaths are not set aside: each costs a timeout or a group restart, so they end
the test at once (see :class:`harness.core.evidence.SamplerHang` and :class:`harness.core.evidence.SamplerDeath`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from hypothesis import currently_in_test_context, reject, settings

from sampler_conformance.core.case import Observation, largest_sizes
from sampler_conformance.core.evidence import FAULT, SamplerFault, failure_kind
from sampler_conformance.core.invariants import REGISTRY

# How far the draws go on past crashing cases, in multiples of the profile's examples: a
# sampler that crashes on most small sizes is still judged on enough of the rest to reach
# the floor of judged cases (profiles.judged_floor), and one that crashes everywhere costs
# a bounded number of draws. A test that has judged fewer cases than its share of the floor,
# at a rate that would reach it by DRAW_ON_ALLOWANCE times, draws on, so that a verdict does
# not hinge on one case more or less; one that judges too rarely (only where W = 1, say, for
# a sampler whose rank 1 always raises) stops at SET_ASIDE_ALLOWANCE, "not judged".
SET_ASIDE_ALLOWANCE = 3
DRAW_ON_ALLOWANCE = 10


@dataclass
class _RunningTest:
    flag: str | None = None  # the invariant of the test that is running
    owns_crashes: bool = False  # it is the subject's crash flag ("runs without crashing")
    set_aside: list[SamplerFault] = field(default_factory=list)
    examples: int = 0  # examples Hypothesis ran through the test
    judged: int = 0  # examples that ran to the end and could have failed: every check on them held
    too_few_items: int = 0  # examples that ran to the end on too few items to fail the invariant
    judged_from: int = 1  # the items an observation needs to judge the invariant (Invariant.judged_from)
    share: int = 0  # the judged cases it draws on for, past SET_ASIDE_ALLOWANCE (its share of the floor)
    # The example running now: whether expect_holds judged an observation of it, and one that could fail.
    noted: bool = False
    could_fail: bool = False
    example_sizes: dict[str, int] = field(default_factory=dict)  # the largest sizes of its cases that could fail
    sizes: dict[str, int] = field(default_factory=dict)  # the largest sizes of the cases the test judged


_RUNNING = _RunningTest()


def begin_test(flag: str | None, crash_flag: str) -> None:
    """A test of invariant ``flag`` begins; ``crash_flag`` is its subject's: a crash is that one's own business."""
    _RUNNING.flag = flag
    _RUNNING.owns_crashes = flag == crash_flag
    _RUNNING.set_aside = []
    _RUNNING.examples = 0
    _RUNNING.judged = 0
    _RUNNING.too_few_items = 0
    _RUNNING.judged_from = REGISTRY[flag].judged_from if flag in REGISTRY else 1
    _RUNNING.share = 0
    _RUNNING.sizes = {}
    _begin_example()


def draw_on_for(share: int) -> None:
    """The running test draws on past SET_ASIDE_ALLOWANCE until it has judged ``share`` cases
    (its examples, or the floor if that is fewer), within DRAW_ON_ALLOWANCE."""
    _RUNNING.share = share


def _begin_example() -> None:
    _RUNNING.noted = False
    _RUNNING.could_fail = False
    _RUNNING.example_sizes = {}


def note_judged(observation: Observation) -> None:
    """``expect_holds`` found the running test's invariant held on ``observation``: the example
    judged it if the ranks read at least the invariant's ``judged_from`` items. The plugin
    installs it with ``harness.core.evidence.note_judged_with``."""
    _RUNNING.noted = True
    if observation.items_read >= _RUNNING.judged_from:
        _RUNNING.could_fail = True
        _RUNNING.example_sizes = largest_sizes(_RUNNING.example_sizes, observation.case.sizes())


def _could_have_failed() -> bool:
    """The example that ran to the end judged the invariant: some observation it judged could
    have failed it, or it judged none through ``expect_holds`` (a test that checks otherwise)."""
    return _RUNNING.could_fail or not _RUNNING.noted


def count_examples(test: Callable[..., Any]) -> None:
    """Count the examples of a Hypothesis test, and those that run to the end (through the
    documented ``test.hypothesis.inner_test`` hook): those, and only those, judged its invariant,
    if they read enough items to fail it (:func:`note_judged`)."""
    inner = test.hypothesis.inner_test  # type: ignore[attr-defined]  # set by @given, untyped
    if getattr(inner, "counts_judged", False):
        return

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        _RUNNING.examples += 1
        _begin_example()
        result = inner(*args, **kwargs)
        if not _could_have_failed():  # an empty epoch held: it judged nothing, so another is drawn
            _RUNNING.too_few_items += 1
            reject()
        _RUNNING.judged += 1
        _RUNNING.sizes = largest_sizes(_RUNNING.sizes, _RUNNING.example_sizes)
        return result

    counted.counts_judged = True  # type: ignore[attr-defined]  # a marker on our wrapper
    test.hypothesis.inner_test = counted  # type: ignore[attr-defined]  # set by @given, untyped


def examples() -> int:
    """Examples of the running test that Hypothesis ran (0 for a test without Hypothesis)."""
    return _RUNNING.examples


def judged() -> int:
    """Examples of the running test that judged its invariant (and found it held)."""
    return _RUNNING.judged


def too_few_items() -> int:
    """Examples of the running test that ran to the end on too few items to fail its invariant."""
    return _RUNNING.too_few_items


def ran_to_the_end() -> int:
    """Examples of the running test that ran to the end, whether or not they could fail it."""
    return _RUNNING.judged + _RUNNING.too_few_items


def judged_fixed_case(passed: bool) -> int:
    """A test without Hypothesis judges its one fixed case if it passed, on enough items."""
    judged = passed and _could_have_failed()
    if judged:
        _RUNNING.sizes = largest_sizes(_RUNNING.sizes, _RUNNING.example_sizes)
    return int(judged)


def judged_sizes() -> dict[str, int]:
    """The largest sizes (``Case.sizes``) of the cases the running test judged."""
    return dict(_RUNNING.sizes)


def judge_only_if(condition: bool) -> None:
    """Hypothesis's assume(), by name: an example that cannot judge the invariant (too few
    items to tell two orders apart) is rejected, so it does not count as judged."""
    if not condition:
        reject()


def set_aside_or_raise(fault: SamplerFault) -> NoReturn:
    """Reject the example if ``fault`` breaks none of the running test's own invariant and a
    Hypothesis test is drawing examples; otherwise raise it. The plugin installs it as what
    ``ask`` does with a sampler's fault (``harness.execution.scenario.handle_faults_with``);
    faults inside ``harness.execution.scenario.probing`` never reach it."""
    __tracebackhide__ = True  # failures point at the sampler, not the harness
    flags = {v.flag for v in fault.violations}
    own = flags == {_RUNNING.flag} or (_RUNNING.owns_crashes and flags == {FAULT})
    if _RUNNING.flag is not None and not own and currently_in_test_context():
        _RUNNING.set_aside.append(fault)
        if _enough_set_aside(len(_RUNNING.set_aside), settings().max_examples):
            raise EnoughSetAside()
        reject()
    raise fault


def _enough_set_aside(set_aside: int, examples: int) -> bool:
    """Stop drawing: SET_ASIDE_ALLOWANCE times the profile's examples set aside, unless the
    test is short of its share of the floor and the rate at which it judged cases so far
    would reach the share by DRAW_ON_ALLOWANCE times them; at that, in any case."""
    if set_aside < SET_ASIDE_ALLOWANCE * examples:
        return False
    judged, limit = _RUNNING.judged, DRAW_ON_ALLOWANCE * examples
    within_reach = judged * limit >= _RUNNING.share * set_aside  # judged / set_aside, kept up to the limit
    return set_aside >= limit or judged >= _RUNNING.share or not within_reach


class EnoughSetAside(BaseException):
    """SET_ASIDE_ALLOWANCE times as many examples set aside as the profile runs: the test
    stops, and counts as judged on the examples that did not crash, or as not judged if none
    did. Without this stop Hypothesis would draw up to ten times its examples looking for
    valid ones."""


def set_aside_by_flag(faults: list[SamplerFault], crash_flag: str) -> dict[str, int]:
    """How many of ``faults`` each flag is charged with: a raise (``FAULT``) to ``crash_flag``,
    items that break the convention to their own flag (``valid_indices``, ``item_ids``)."""
    counts: dict[str, int] = {}
    for fault in faults:
        for flag in sorted({crash_flag if v.flag == FAULT else v.flag for v in fault.violations}):
            counts[flag] = counts.get(flag, 0) + 1
    return counts


def smallest_of_each_kind(faults: list[SamplerFault]) -> list[tuple[SamplerFault, int]]:
    """Each kind of fault among ``faults`` (smallest case first, as :func:`take_set_aside`
    gives them), most seen first: its smallest case, and on how many cases it was seen. A
    sampler that raises ValueError on N = 0 and TypeError everywhere else shows both."""
    kinds: dict[tuple[str, ...], tuple[SamplerFault, int]] = {}
    for fault in faults:
        kind = tuple(failure_kind(v.title, v.message) for v in fault.violations)
        smallest, seen = kinds.get(kind, (fault, 0))
        kinds[kind] = (smallest, seen + 1)
    return sorted(kinds.values(), key=lambda kind: -kind[1])


def take_set_aside() -> list[SamplerFault]:
    """The faults set aside in the running test, smallest case first; clears them."""
    faults, _RUNNING.set_aside = _RUNNING.set_aside, []
    return sorted(faults, key=lambda f: (f.case.dataset_size, f.case.world_size) if f.case else (0, 0))
