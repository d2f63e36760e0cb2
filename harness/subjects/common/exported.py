"""Environment variables set for a while, then as they were."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def exported(values: Mapping[str, object]) -> Iterator[None]:
    """``values`` exported (as strings) while the block runs; each variable restored after, or unset again."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(value) for name, value in values.items()})
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
