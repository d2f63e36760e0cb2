"""Each process's hash seed, derived from the certification's seed: the same command gives
the same verdict for a sampler whose order depends on ``hash()`` of a str.

A fresh interpreter draws its own hash seed (``PYTHONHASHSEED`` unset), so such a sampler
yields other orders on every run, and Hypothesis, following its outcomes, draws other cases:
one run held an invariant that the next could not judge. With a fixed certification seed,
the processes that run the subject get ``PYTHONHASHSEED`` = :func:`hash_seed_for` their
position in a group (the simulated ranks and each group's first rank position 0), still a
different one at each position, so a sampler whose ranks disagree through ``hash()``
(``HashSeededShuffle``) is still seen. A process whose own hash seed is already position
0's forks those ranks itself; any other starts them from a fresh interpreter seeded so
(``rank_pool.RankPool._context``). The ``search`` profile draws fresh cases on every run,
and leaves hash seeds random too.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import zlib

HASH_SEED_VARIABLE = "PYTHONHASHSEED"
# PYTHONHASHSEED's range; 0 turns hash randomisation off, which no derived seed is.
_HASH_SEEDS = 2**32 - 1
_PROBE = "sampler-conformance"
_PROBE_TIMEOUT_S = 30

_certification_seed: int | str | None = None


def seed_hashes(certification_seed: int | str | None) -> None:
    """Derive every process's hash seed from ``certification_seed`` (None: random, as Python leaves them)."""
    global _certification_seed
    _certification_seed = certification_seed
    if certification_seed is not None and hashes_as(0):
        # This process hashes as position 0 does: its children (xdist's workers, loader servers) say so too.
        os.environ[HASH_SEED_VARIABLE] = str(hash_seed_for(0))


def hash_seed_for(position: int) -> int | None:
    """The hash seed of the processes at ``position`` of a group; None where they are left random."""
    return derived_hash_seed(_certification_seed, position)


def derived_hash_seed(certification_seed: int | str | None, position: int) -> int | None:
    """The hash seed the processes at ``position`` get in a certification drawn from ``certification_seed``."""
    if certification_seed is None:
        return None
    return (zlib.crc32(str(certification_seed).encode()) + position) % _HASH_SEEDS + 1


def hashes_as(position: int) -> bool:
    """This process hashes strings as position ``position``'s processes do (always, where those are random)."""
    seed = hash_seed_for(position)
    return seed is None or _probe(seed) == hash(_PROBE)


@functools.cache
def _probe(seed: int) -> int | None:
    """``hash(_PROBE)`` in an interpreter started with hash seed ``seed`` (tens of milliseconds:
    no imports); None where it cannot tell, and the ranks then start from a seeded interpreter."""
    environ = {**os.environ, HASH_SEED_VARIABLE: str(seed)}
    command = [sys.executable, "-S", "-s", "-c", f"print(hash({_PROBE!r}))"]  # not -I: it ignores PYTHONHASHSEED
    try:
        run = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S)
        return int(run.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def describe() -> str:
    """The certificate's words for the hash seeds of the processes that ran the subject."""
    if _certification_seed is None:
        return os.environ.get(HASH_SEED_VARIABLE, "random")
    return f"{hash_seed_for(0)} + the rank's position in its group (derived from the seed)"
