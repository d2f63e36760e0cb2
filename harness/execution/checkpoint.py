"""Checkpoints as training loops take them: torch's Stateful protocol, and a state's trip
through a checkpoint file, ``torch.save`` then ``torch.load(weights_only=True)``, which
refuses anything but plain data (tensors, numbers, strings, lists, tuples and dicts of them)."""

from __future__ import annotations

import io
from typing import Any

import torch

# torch's Stateful protocol: what a resumable sampler or dataset must have.
STATEFUL_METHODS = ("state_dict", "load_state_dict")


def missing_methods(subject: Any) -> tuple[str, ...]:
    """The Stateful methods ``subject`` lacks."""
    return tuple(name for name in STATEFUL_METHODS if not callable(getattr(subject, name, None)))


def through_checkpoint(state: Any) -> tuple[Any, str | None]:
    """``state`` after ``torch.save`` and ``torch.load(weights_only=True)``, as a checkpoint
    file carries it; if it cannot make the trip, the state itself and why not."""
    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=True), None
    except Exception as exc:  # any failure of the trip is the state's: it is not plain data
        return state, _why_not_plain(exc)


def _why_not_plain(exc: Exception) -> str:
    """The line of torch's (long) message that names what was refused, e.g. ``Unsupported
    global: GLOBAL numpy._core.multiarray.scalar was not an allowed global by default``."""
    text = str(exc)
    line = next((line for line in text.splitlines() if "Unsupported global" in line), text)
    line = line.split("Unsupported global: ", 1)[-1].split(". Please use", 1)[0]
    return f"{type(exc).__name__}: {' '.join(line.split())[:300]}"
