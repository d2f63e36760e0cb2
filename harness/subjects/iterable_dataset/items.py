"""Reading ids out of what a streaming dataset yields, and the batches the suite's DataLoader
makes of them: each batch knows the worker that made it.

The convention (``plug.py``): an item is an id, a Python int or a 0-d integer tensor (or a
numpy integer), or a mapping holding the id under ``"id"``, or a tuple or list holding it
first. Anything else is reported under ``item_ids`` with the first offending item.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import get_worker_info

from sampler_conformance.execution.scenario import BadItems

ID_KEY = "id"
MAIN_PROCESS = -1  # the worker id of batches read without workers


class BadItem(BadItems):
    """An item without a readable id, or more items than a rank may yield."""

    flag = "item_ids"


@dataclass(frozen=True)
class Batch:
    """One batch as the suite's collate function made it, in the worker that read it."""

    worker: int  # get_worker_info().id, or MAIN_PROCESS
    ids: np.ndarray  # int64
    bad: str = ""  # why an item has no id (the batch is then not read)


def item_id(item: Any) -> int:
    """The id an item carries, or :class:`BadItem` saying what it is instead."""
    carrier = item
    if isinstance(item, Mapping):
        if ID_KEY not in item:
            raise BadItem(f"yielded a mapping without the key {ID_KEY!r} (keys: {sorted(map(str, item))[:8]})")
        carrier = item[ID_KEY]
    elif isinstance(item, (tuple, list)):
        if not item:
            raise BadItem(f"yielded an empty {type(item).__name__}; a tuple or list holds the id first")
        carrier = item[0]
    if isinstance(carrier, torch.Tensor) and carrier.dim() == 0 and not carrier.is_floating_point():
        carrier = carrier.item()
    if isinstance(carrier, (int, np.integer)) and not isinstance(carrier, (bool, np.bool_)):
        return int(carrier)
    where = "" if carrier is item else f" (in {type(item).__name__} {_short(item)})"
    raise BadItem(
        f"yielded {_kind(carrier)} {_short(carrier)} as an item's id{where}; an id is an int (or a 0-d integer "
        f"tensor), alone, under the key {ID_KEY!r} of a mapping, or first in a tuple"
    )


def _kind(value: Any) -> str:
    module, name = type(value).__module__, type(value).__qualname__
    return f"a {name}" if module == "builtins" else f"a {module}.{name}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def batch_of(items: list[Any], worker: int) -> Batch:
    try:
        if set(map(type, items)) <= {int}:  # plain ids (no bool, no tensor): converted at C speed, 15x faster
            ids = np.array(items, dtype=np.int64)
        else:
            ids = np.array([item_id(item) for item in items], dtype=np.int64)
    except BadItem as exc:
        return Batch(worker, np.empty(0, dtype=np.int64), str(exc))
    except OverflowError:
        return Batch(worker, np.empty(0, dtype=np.int64), "yielded an id far outside any dataset")
    return Batch(worker, ids)


def collate_ids(items: list[Any]) -> Batch:
    """The DataLoader's ``collate_fn``: the ids of a batch, tagged with the worker that read it."""
    info = get_worker_info()
    return batch_of(items, MAIN_PROCESS if info is None else info.id)


def checked(batch: Any) -> Batch:
    """A batch as it reached the rank's main process; :class:`BadItem` for one with an item without an id."""
    if not isinstance(batch, Batch):  # the suite's collate makes every batch: this cannot be the dataset's doing
        raise TypeError(f"the DataLoader delivered {type(batch).__name__}, not the suite's Batch")
    if batch.bad:
        raise BadItem(batch.bad)
    return batch
