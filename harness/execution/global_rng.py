"""The process-global RNGs a sampler must neither read nor advance: torch, numpy, random."""

from __future__ import annotations

import hashlib
import pickle
import random

import numpy as np
import torch


def seed_global_rngs(seed: int) -> None:
    # The CPU generator only: torch.manual_seed also queues the seeding of every CUDA device,
    # and capturing where it was called from costs a millisecond per call.
    torch.default_generator.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def seed_global_rngs_afresh() -> None:
    """Each global RNG seeded from the system's entropy, as a fresh interpreter seeds it (torch
    2.13's own too: two interpreters draw different torch.randperm(6)). A process forked from a
    fork server starts with the server's RNG states instead, the same in every child."""
    torch.default_generator.seed()
    np.random.seed(None)
    random.seed(None)


def draw_once_from_global_rngs() -> None:
    """One draw from each global RNG: what dropout on a batch only this rank has, or a collator
    masking with ``seed=None``, does to one rank of a job and not to the others."""
    torch.rand(1)
    np.random.random()
    random.random()


def global_rng_fingerprints() -> dict[str, str]:
    """A digest of each global RNG's state, to tell whether a call advanced it."""
    states = {
        "torch": torch.get_rng_state().numpy().tobytes(),
        "numpy": pickle.dumps(np.random.get_state()),
        "random": pickle.dumps(random.getstate()),
    }
    return {name: hashlib.sha1(state).hexdigest() for name, state in states.items()}


def advanced(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [name for name in before if before[name] != after[name]]
