"""speechbrain (PyPI ``speechbrain``): ``DynamicBatchSampler`` wrapped in
``DistributedSamplerWrapper``, as ``Brain`` wraps a batch sampler under DDP.

    sampler_conformance.adapters.speechbrain:DynamicBatchSampler   contract dynamic_batches

``DynamicBatchSampler(range(N), max_batch_length=max_tokens, num_buckets=NUM_BUCKETS,
lengths_list=lengths, shuffle=True, batch_ordering="random", seed=seed)`` plans one epoch's
batches in every process; ``Brain._train_loader_specifics`` (``core.py:716-722``) hands it to
``DistributedSamplerWrapper(batch_sampler, rank=rank, shuffle=True)``, a ``DistributedSampler``
over the list of batches: rank r takes batches r, r + W, ... of a shuffled order, padded from
the head. Each bucket's batches hold ``int(max_batch_length / boundary)`` items, so a batch's
longest item times its size stays within the budget: it declares ``batch_cost = "padded"``.

speechbrain imports ``torchaudio`` at import time, and the torchaudio wheels PyPI has beside
torch 2.13.0 do not load (2.11.0 is a CUDA build that cannot find ``libc10_cuda.so``). The
sampler module uses none of it, so where ``import torchaudio`` fails an empty module takes
its place before speechbrain is imported: when this module is imported, so that the check
that speechbrain is installed and imports (``@needs``) imports it as the factory will
(docs/batch-samplers.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Sequence
from typing import Any

from . import needs, require

ADAPTER = f"{__name__}:DynamicBatchSampler"
NUM_BUCKETS = 4  # speechbrain has no default; the suite's datasets have at most 200 items


def _stub_torchaudio_where_it_does_not_load() -> None:
    """Only where speechbrain is installed: elsewhere nothing would import it."""
    if importlib.util.find_spec("speechbrain") is None:
        return
    try:
        importlib.import_module("torchaudio")
    except (ImportError, OSError):
        sys.modules["torchaudio"] = types.ModuleType("torchaudio")


_stub_torchaudio_where_it_does_not_load()


def _sampler_module() -> Any:
    return require("speechbrain.dataio.sampler", "speechbrain", ADAPTER)


@needs("speechbrain", "speechbrain")
def DynamicBatchSampler(lengths: Sequence[int], *, num_replicas: int, rank: int, max_tokens: int, seed: int = 0) -> Any:
    sampler = _sampler_module()
    batches = sampler.DynamicBatchSampler(
        range(len(lengths)),
        max_batch_length=max_tokens,
        num_buckets=NUM_BUCKETS,
        lengths_list=list(lengths),
        shuffle=True,
        batch_ordering="random",
        seed=seed,
    )
    return sampler.DistributedSamplerWrapper(batches, num_replicas=num_replicas, rank=rank, shuffle=True)


DynamicBatchSampler.batch_cost = "padded"  # type: ignore[attr-defined]
