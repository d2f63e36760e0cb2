"""One crash is one finding.

A sampler that raises on some cases (say N = 0) breaks one invariant for it, `edge_sizes`
("runs without crashing"), with the smallest case it crashed on. Every other invariant is
judged on the cases where it did not crash: inside a Hypothesis test, a fault that is not
the running test's own business is set aside and the example rejected, so Hypothesis draws
another. When the test ends, the plugin charges the smallest case set aside to the
invariant its violation names (edge_sizes for a crash, valid_indices for items that are not
indices); a test whose every example was set aside has judged nothing, and its invariant is
"not judged".

Hangs and deaths are not set aside: each costs a timeout or a group restart, so they end
the test at once (see :class:`harness.core.evidence.SamplerHang` and :class:`harness.core.evidence.SamplerDeath`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from hypothesis import currently_in_test_context, reject, settings

from sampler_conformance.core.evidence import FAULT, SamplerFault

# How far the draws go on past crashing cases, in multiples of the profile's examples: a
# sampler that crashes on most small sizes is still judged on enough of the rest to reach
# the floor of judged cases (profiles.judged_floor), and one that crashes everywhere costs
# a bounded number of draws.
SET_ASIDE_ALLOWANCE = 3


@dataclass
class _RunningTest:
    flag: str | None = None  # the invariant of the test that is running
    owns_crashes: bool = False  # it is the subject's crash flag ("runs without crashing")
    set_aside: list[SamplerFault] = field(default_factory=list)
    examples: int = 0  # examples Hypothesis ran through the test
    judged: int = 0  # examples that ran to the end: every check on them held


_RUNNING = _RunningTest()


def begin_test(flag: str | None, crash_flag: str) -> None:
    """A test of invariant ``flag`` begins; ``crash_flag`` is its subject's: a crash is that one's own business."""
    _RUNNING.flag = flag
    _RUNNING.owns_crashes = flag == crash_flag
    _RUNNING.set_aside = []
    _RUNNING.examples = 0
    _RUNNING.judged = 0


def count_examples(test: Callable[..., Any]) -> None:
    """Count the examples of a Hypothesis test, and those that run to the end (through the
    documented ``test.hypothesis.inner_test`` hook): those, and only those, judged its invariant."""
    inner = test.hypothesis.inner_test  # type: ignore[attr-defined]  # set by @given, untyped
    if getattr(inner, "counts_judged", False):
        return

    @functools.wraps(inner)
    def counted(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        _RUNNING.examples += 1
        result = inner(*args, **kwargs)
        _RUNNING.judged += 1
        return result

    counted.counts_judged = True  # type: ignore[attr-defined]  # a marker on our wrapper
    test.hypothesis.inner_test = counted  # type: ignore[attr-defined]  # set by @given, untyped


def examples() -> int:
    """Examples of the running test that Hypothesis ran (0 for a test without Hypothesis)."""
    return _RUNNING.examples


def judged() -> int:
    """Examples of the running test that judged its invariant (and found it held)."""
    return _RUNNING.judged


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
        if len(_RUNNING.set_aside) >= SET_ASIDE_ALLOWANCE * settings().max_examples:
            raise EnoughSetAside()
        reject()
    raise fault


class EnoughSetAside(BaseException):
    """SET_ASIDE_ALLOWANCE times as many examples set aside as the profile runs: the test
    stops, and counts as judged on the examples that did not crash, or as not judged if none
    did. Without this stop Hypothesis would draw up to ten times its examples looking for
    valid ones."""


def take_set_aside() -> list[SamplerFault]:
    """The faults set aside in the running test, smallest case first; clears them."""
    faults, _RUNNING.set_aside = _RUNNING.set_aside, []
    return sorted(faults, key=lambda f: (f.case.dataset_size, f.case.world_size) if f.case else (0, 0))
