"""What one rank of the subject costs as N grows, measured before the draws.

Each size is measured in a process of its own, forked from the fork server (torch imported,
nothing else held): the subject builds rank 0's thing of a case of N items on W ranks, and
the process reports the peak of its resident memory above what it held just before the
build (Linux's VmHWM, reset through ``/proc/self/clear_refs``), the time from the build to
the first item (index, batch or draw), and the time per further item over a short read.

Two sweeps, each N = 1e4, 1e5, ... (:data:`SIZES`): one on :data:`WORLD` ranks, where the
rank's share grows with N, and one at a fixed share of :data:`SHARE` items per rank (W =
N / SHARE), where only the job grows. A cost that grows in the second grows with N itself
(a permutation held whole on every rank), not with the rank's share. A sweep stops after
the first size that passes the budget (:data:`MEMORY_BUDGET`, :data:`TIME_BUDGET_S`), and
before a size its growth so far projects past :data:`PROJECTED_LIMIT` times it: so no
sampler costs the measurement more than a few budgets. The sweep at a fixed share measures
the sizes its judgment needs (``SPAN_NEEDED`` of N) whatever the projection: two small
figures on a loaded machine project a steep growth that the next size need not have, and a
sweep cut short there judges nothing. It goes on, too, while what it measured grew tenfold
without passing the charged figure (``core.cost.undecided``): a size ten times larger
decides. Every child has a bounded wait and is reaped; one that raises, dies, passes its
memory limit or never yields ends its sweep with the reason.
"""

from __future__ import annotations

import gc
import math
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sampler_conformance.core.cost import (
    MEMORY_BUDGET,
    SHARE,
    SIZES,
    SPAN_NEEDED,
    TIME_BUDGET_S,
    WORLD,
    Cost,
    Reading,
    large,
    memory,
    seconds,
)
from sampler_conformance.core.cost import undecided as growth_undecided  # sweep() has its own parameter named so

from . import memory_budget

PROJECTED_LIMIT = 4  # a size projected past this many budgets is not measured
FURTHER_ITEMS = 100_000  # read after the first, to time each further one...
FURTHER_S = 0.05  # ... for at most this long
PASS_S = 10.0  # a whole pass is read for at most this long
LIMIT = PROJECTED_LIMIT * MEMORY_BUDGET  # a child's memory, its inputs' and the sampler's
WAIT_S = PROJECTED_LIMIT * TIME_BUDGET_S + 20  # a child's bound: its build, its read, its start
CLEAR_REFS = Path("/proc/self/clear_refs")  # where a child resets its peak memory: Linux only


# What a subject gives the probe: (plug, contract, N, W, rank) -> a function that builds the
# thing (everything else the build needs, made beforehand, is not counted).
Builder = Callable[[Any, Any, int, int, int], Callable[[], Iterable[Any]]]


@dataclass(frozen=True)
class Probed:
    """What is measured: the spec, the contract it is built for, and its subject's loader and
    builder (``Subject.load``, ``Subject.cost_probe``), sent to each child."""

    spec: str
    contract: Any
    load: Callable[[str], Any]
    build: Builder
    noun: str = "sampler"  # what the subject calls the thing: "the dataset raised"
    # Each size forked from a fresh interpreter's server, not this process's: this process
    # imported the spec's package to check it and forgot it, and a child of its own would
    # import it a second time (datasets then raises ArrowKeyError: its types are registered).
    fresh_server: bool = False


def sweep(
    probed: Probed,
    sizes_and_worlds: Iterable[tuple[int, int]],
    needed: int = 0,
    undecided: Callable[[list[Reading]], bool] = lambda readings: False,
) -> list[Reading]:
    """Readings of ``(N, W)`` in turn, up to the first over the budget, and none projected past
    PROJECTED_LIMIT budgets from the two before it but those up to N = ``needed`` and those
    measured while the readings so far leave the judgment ``undecided``."""
    readings: list[Reading] = []
    for size, world in sizes_and_worlds:
        if (
            size > needed
            and len(readings) >= 2
            and not undecided(readings)
            and _projected_past_limit(readings[-2], readings[-1], size)
        ):
            break
        reading = measure(probed, size, world)
        readings.append(reading)
        if reading.over_budget:
            break
    return readings


def sweeps(probed: Probed, drawn: tuple[int, int]) -> dict[str, list[Reading]]:
    """Both sweeps, ``on_world`` (W = WORLD) and ``at_share`` (W = N / SHARE), and ``passes``:
    rank 0's whole pass at ``drawn`` = (the largest N, the largest W) the subject's draws
    reach, on WORLD ranks and on the largest W, from which the draws are planned
    (``core/size_plan.py``)."""
    size, most_ranks = drawn
    worlds = sorted({min(WORLD, most_ranks), most_ranks}) if size else []
    return {
        "on_world": sweep(probed, ((n, WORLD) for n in SIZES)),
        "at_share": sweep(
            probed, ((n, n // SHARE) for n in SIZES), needed=SPAN_NEEDED * SIZES[0], undecided=growth_undecided
        ),
        "passes": [measure(probed, size, world, whole=True) for world in worlds],
    }


def _projected_past_limit(before: Reading, last: Reading, size: int) -> bool:
    """Whether ``size`` is projected past PROJECTED_LIMIT budgets, growing from ``last`` as it did from ``before``."""
    for a, b, budget in (
        (before.peak_bytes, last.peak_bytes, MEMORY_BUDGET),
        (before.first_s, last.first_s, TIME_BUDGET_S),
    ):
        if a and b and b > a:
            exponent = math.log(b / a) / math.log(last.size / before.size)
            if b * (size / last.size) ** exponent > PROJECTED_LIMIT * budget:
                return True
    return False


def measure(
    probed: Probed, size: int, world: int, whole: bool = False, limit_bytes: int = LIMIT, wait_s: float = WAIT_S
) -> Reading:
    """One size, in a child forked for it and limited to ``limit_bytes``, waited for at most
    ``wait_s`` and reaped; ``whole``: the rank's whole pass is read (for at most PASS_S), not
    only a short read after its first item. (The limit and the wait are the probe's; a
    benchmark measuring past them sets its own.)"""
    # Not at import: the registry of invariants reads SHARE.
    from .processes import fork_server_for

    context = fork_server_for(probed.fresh_server)
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_measure_here, args=(sending, probed, size, world, whole, limit_bytes), daemon=True)
    child.start()
    sending.close()
    try:
        if receiving.poll(wait_s):
            try:
                return Reading(**receiving.recv())
            except EOFError:
                pass  # it died before it answered: its exit code says how
        else:
            return Reading(size, world, stopped=f"the sampler gave no first item within {wait_s:.0f} s")
    finally:
        receiving.close()
        if child.is_alive():
            child.kill()
        child.join(5)
    return Reading(size, world, stopped=f"the process died (exit code {child.exitcode})")


def _measure_here(conn: Any, probed: Probed, size: int, world: int, whole: bool, limit_bytes: int) -> None:
    """In the child: build rank 0's thing, time its first item and a short read (or its whole
    pass), and send the figures. What the build writes to the temp folder (a stream's shards)
    goes to a folder of the child's, removed when it has measured."""
    memory_budget.apply(limit_bytes)
    with tempfile.TemporaryDirectory(prefix="sampler-conformance-cost-") as folder:
        tempfile.tempdir = folder
        conn.send(asdict(_reading(probed, size, world, whole, limit_bytes)))
    conn.close()


def _reading(probed: Probed, size: int, world: int, whole: bool, limit_bytes: int) -> Reading:
    limit = f"{limit_bytes / memory_budget.GIB:.0f} GiB"
    try:
        build = probed.build(probed.load(probed.spec), probed.contract, size, world, 0)
    except MemoryError:  # the suite's own inputs (labels of N items): not the sampler's cost
        return Reading(size, world, stopped=f"the suite's own inputs of N={large(size)} passed {limit}")
    noun = probed.noun
    try:
        gc.collect()
        before = _reset_peak()
        start = time.perf_counter()
        items = iter(build())
        next(items)
        first_s = time.perf_counter() - start
        further, begun = 0, time.perf_counter()
        # A whole pass: up to the rank's share (what the draws' readings take of an endless one).
        limit_items, limit_s = (-(-size // world), PASS_S) if whole else (FURTHER_ITEMS, FURTHER_S)
        for _ in items:
            further += 1
            if further >= limit_items or time.perf_counter() - begun > limit_s:
                break
        elapsed = time.perf_counter() - begun
        return Reading(
            size,
            world,
            peak_bytes=max(0, _status("VmHWM") - before),
            first_s=first_s,
            per_item_s=elapsed / further if further else None,
            further=further,
            # A pass cut at PASS_S counts as PASS_S: a lower bound, past any budget a case has.
            pass_s=first_s + elapsed if whole else None,
        )
    except StopIteration:
        return Reading(size, world, stopped=f"the {noun} yielded nothing")
    except MemoryError:
        return Reading(size, world, stopped=f"the {noun} passed the probe's memory limit of {limit}")
    except Exception as exc:  # the sampler's: where the draws reach its size, the tests charge it
        return Reading(size, world, stopped=f"the {noun} raised {type(exc).__name__}: {str(exc)[:200]}")


def _reset_peak() -> int:
    """Resets the process's peak resident memory to its present one, which it returns (bytes)."""
    CLEAR_REFS.write_text("5")
    return _status("VmRSS")


def _status(field: str) -> int:
    figure = memory_budget.process_status(field)
    if figure is None:
        raise OSError(f"/proc/self/status has no {field}")
    return figure


# A partial or edge reading's projected time, every rank read built afresh (--read-budget).
READ_BUDGET_S = 60.0


def unaffordable(
    cost: Cost | None,
    size: int,
    world_size: int,
    reads: int,
    reason_unmeasured: str,
    items_read: int = 0,
    budget_s: float = READ_BUDGET_S,
) -> str:
    """Why a case of ``size`` items on ``world_size`` ranks, ``reads`` of them read, each to
    ``items_read`` items past its first, is not read (empty: it is): its projected cost past
    the sampler process's memory budget or ``budget_s``, or no cost to project from."""
    where = f"not judged at N={size:,}, W={world_size:,}"
    if cost is None:
        return f"{where}: one rank's cost was not measured ({reason_unmeasured}), so nothing bounds it there"
    peak, first = cost.projected(size, world_size)
    if peak is None and first is None:  # its first size stopped: nothing to project from
        stopped = cost.stopped()
        why = stopped[0].stopped if stopped else "no size was measured"
        return f"{where}: one rank's cost was not measured ({why}), so nothing bounds it there"
    budget = memory_budget.budget()
    if peak is not None and budget is not None and peak > budget:
        return (
            f"{where}: projected {memory(peak)} per rank, past the sampler process's memory budget of "
            f"{memory(budget)} (--memory-budget)"
        )
    if first is None:
        return ""
    read_s = first + (cost.per_item_s() or 0.0) * items_read
    if read_s * reads > budget_s:
        what = "before its first item" if not items_read else f"to read {items_read:,} items"
        return (
            f"{where}: projected {seconds(read_s)} per rank {what}, {reads} ranks read: past {seconds(budget_s)} "
            "(--read-budget)"
        )
    return ""
