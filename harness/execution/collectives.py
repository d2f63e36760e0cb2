"""What a rank does with its peers and its loader workers, for every subject: the suite's own
all-reduce (marked, so that a rank left waiting there by a peer's fault is not blamed), and
how DataLoader workers start."""

from __future__ import annotations

import multiprocessing
import os

import torch
import torch.distributed as dist

from .backend import rank_device
from .scenario import RankContext


def all_reduce_counts(rank: RankContext, count: int) -> tuple[int, ...]:
    """All-reduce (sum) of a one-hot vector: every rank learns every rank's count."""
    if rank.backend is None:
        raise RuntimeError("a simulated rank has no process group to all-reduce in")
    # The rank body exports LOCAL_RANK as torchrun does: the GPU index on this rank's node.
    local_rank = int(os.environ.get("LOCAL_RANK", rank.rank))
    counts = torch.zeros(rank.world_size, dtype=torch.int64, device=rank_device(rank.backend, local_rank))
    counts[rank.rank] = count
    rank.watch.in_collective.value = 1
    try:
        dist.all_reduce(counts)
    finally:
        rank.watch.in_collective.value = 0
    return tuple(int(c) for c in counts.cpu().tolist())


def worker_start_method() -> str:
    """How loader workers start: forkserver where the platform has it, else spawn.

    Not fork. By the time a loader starts, a rank that joined a gloo group runs four more
    threads than its main one (measured: 1 + 4 after init_process_group), and a child
    forked from a multi-threaded process can deadlock on a lock another thread held at the
    fork (Python 3.12 warns about exactly this). Seen here: about one certification in six
    had a rank wait forever for a forked worker's first batch (docs/process-groups.md,
    "Loader workers start from a fork server"). The fork server is a single-threaded
    process with torch imported, forked from the rank before it joins the group
    (``harness.execution.fork_server``), that forks each worker: what Python 3.14 makes the default
    on Linux, and as cheap per worker as fork once it runs.
    """
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
