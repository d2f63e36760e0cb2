"""One row of the verdict table: a real sampler, the contract it claims and the package it
comes from (``adapters/catalogue.py`` lists them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RealSampler:
    sampler: str  # as people know it
    spec: str  # --sampler
    contract: str  # the contract the sampler claims
    requirement: str | None  # what to pip install (space-separated); None: ships with torch or with this repo
    version_of: str | None  # distribution whose version the row shows; None: not a PyPI package
    origin: str = ""  # shown instead of a version when version_of is None
    # Why the verdict table cannot certify it in its environment (the docs say where it was); "": it does.
    not_in_table: str = ""
    options: tuple[str, ...] = ()  # more options of its certification, as the table shows them (--meshes=...)
    # Why the table certifies it in a virtual environment of its own (what another row installs breaks its
    # import); "": in the table's shared one.
    alone: str = ""


MEGATRON_ORIGIN = "Megatron-LM cd55b7a (not on PyPI; ported in selftests/corpus/megatron.py)"
FAIRCHEM_ORIGIN = (
    "fairchem-core 2.24.0 (its module imports numba and fairchem's datasets, and the wheel pins its own torch; "
    "ported in selftests/corpus/fairchem.py)"
)
