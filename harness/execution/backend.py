"""Which torch.distributed backend a pool of W ranks uses, and where its tensors live.

Pure decisions, testable without a GPU: ``--backend=auto`` picks NCCL when there is one
CUDA device per rank and gloo otherwise; an explicit ``nccl`` without enough devices
is a skip with the reason, never a failure and never a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKENDS = ("auto", "gloo", "nccl")
DEFAULT_BACKEND = "auto"


@dataclass(frozen=True)
class BackendChoice:
    """The backend for one world size, or why that world size cannot run here."""

    requested: str
    world_size: int
    name: str | None  # "gloo" or "nccl"; None when it cannot run
    skip_reason: str | None = None

    @property
    def runnable(self) -> bool:
        return self.name is not None


def choose_backend(requested: str, world_size: int, cuda_devices: int) -> BackendChoice:
    """``auto``: nccl with one CUDA device per rank, else gloo. ``nccl`` needs W devices."""
    if requested not in BACKENDS:
        raise ValueError(f"unknown backend {requested!r}; choose one of: {', '.join(BACKENDS)}")
    enough = cuda_devices >= world_size
    if requested == "nccl" and not enough:
        return BackendChoice(requested, world_size, None, nccl_skip_reason(world_size, cuda_devices))
    if requested == "gloo" or (requested == "auto" and not enough):
        return BackendChoice(requested, world_size, "gloo")
    return BackendChoice(requested, world_size, "nccl")


def nccl_skip_reason(world_size: int, cuda_devices: int) -> str:
    return f"needs {world_size} CUDA device{'s' if world_size != 1 else ''}, found {cuda_devices}"


def rank_device(backend: str | None, local_rank: int) -> str:
    """NCCL: one GPU per rank, its node-local index (``cuda:LOCAL_RANK``, which is not the
    global rank on a second node); gloo: the CPU."""
    return f"cuda:{local_rank}" if backend == "nccl" else "cpu"


def cuda_device_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
