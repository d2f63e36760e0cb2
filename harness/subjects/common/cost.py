"""What the cost probe (``harness.execution.cost``) builds of every subject's thing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def at_epoch_zero(build: Callable[[], Any]) -> Callable[[], Any]:
    """``build``, its thing set to epoch 0 where it has ``set_epoch``: what the probe times."""

    def built() -> Any:
        thing = build()
        if callable(getattr(thing, "set_epoch", None)):
            thing.set_epoch(0)
        return thing

    return built
