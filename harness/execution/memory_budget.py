"""A memory budget that a sampler cannot pass (``--memory-budget``).

Every process that runs the sampler (the simulated ranks' sampler process, each rank of a
real group, and the DataLoader workers they fork) may allocate this much above what it held
when it started: past it, the allocation fails inside the sampler, which is charged as a
fault of the sampler's, and nothing else on the machine is the one the kernel kills. The
limit is ``RLIMIT_DATA`` (the heap and private writable mappings, what allocations grow),
not the address space, which CUDA reserves by the terabyte.

By default the budget is a quarter of the memory the machine has available when the run
configures, at least 1 GiB.
"""

from __future__ import annotations

import resource
from pathlib import Path

GIB = 1 << 30
DEFAULT_SHARE = 0.25  # of the machine's available memory
LEAST = GIB

_budget: int | None = None  # bytes above a process's start; None: no budget


def configure(gib: float | None) -> None:
    """The run's budget: ``gib`` GiB, or the default where None."""
    global _budget
    _budget = max(LEAST, int(_available() * DEFAULT_SHARE)) if gib is None else int(gib * GIB)


def budget() -> int | None:
    return _budget


def apply(budget_bytes: int | None) -> None:
    """In a process that runs the sampler: allocations past ``budget_bytes`` above its data
    now fail (its loader workers inherit the limit)."""
    global _budget
    _budget = budget_bytes
    if budget_bytes is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = _data_now() + budget_bytes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def past_budget(exc: BaseException) -> str:
    """What to add to the words of an exception that an allocation past the budget raised
    (empty for any other): where the budget comes from and how to change it."""
    if _budget is None or not _out_of_memory(exc):
        return ""
    return (
        f" (the process reached the suite's memory budget, {_budget / GIB:.1f} GiB above its start: a sampler "
        f"that allocates without bound is stopped there; --memory-budget=GIB sets it)"
    )


def _out_of_memory(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, MemoryError) or "can't allocate memory" in text or "Unable to allocate" in text


def _available() -> int:
    """MemAvailable of /proc/meminfo, in bytes (8 GiB where it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * GIB


def _data_now() -> int:
    """This process's data size (VmData of /proc/self/status), in bytes."""
    return process_status("VmData") or 0


def process_status(field: str) -> int | None:
    """A figure of /proc/self/status (VmData, VmRSS, VmHWM), in bytes; None where it has none."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None
