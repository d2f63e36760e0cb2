"""Fixtures for the tests that run in real process groups only: the group of each world size
(``harness.pytest_plugin.ranks`` holds the pools, and the ``ranks`` parameter of the tests
written once for simulated ranks and real groups alike)."""

from __future__ import annotations

import pytest

from sampler_conformance.execution.rank_pool import RankPool, RankPools
from sampler_conformance.pytest_plugin.ranks import group_pool, world_size_id, world_sizes_of
from sampler_conformance.subjects import REGISTRY

SEED_EXPERIMENT_WORLD_SIZE = 2


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "world_size" in metafunc.fixturenames:
        sizes = world_sizes_of(metafunc)
        metafunc.parametrize("world_size", sizes, ids=[world_size_id(w) for w in sizes])


@pytest.fixture
def group(request: pytest.FixtureRequest, rank_pools: RankPools, world_size: int) -> RankPool:
    """The live process group of ``world_size`` ranks (started on first use)."""
    return group_pool(request, rank_pools, world_size)


@pytest.fixture
def pair(request: pytest.FixtureRequest, rank_pools: RankPools) -> RankPool:
    """A 2-rank group, whatever --world-sizes says: the seed 001 experiment's set-up."""
    return group_pool(request, rank_pools, SEED_EXPERIMENT_WORLD_SIZE)


@pytest.fixture
def stateful_dataloader(request: pytest.FixtureRequest) -> None:
    """Skip, saying how to install it, where torchdata's StatefulDataLoader cannot be imported
    (the invariants that resume through it name the package)."""
    try:
        import torchdata.stateful_dataloader  # noqa: F401
    except ImportError as exc:
        marker = request.node.get_closest_marker("invariant")
        flag = marker.args[0] if marker else "this test"
        packages = " ".join(REGISTRY[flag].packages) if flag in REGISTRY else "torchdata"
        pytest.skip(
            f"{flag} needs torchdata's StatefulDataLoader ({type(exc).__name__}: {exc}): pip install {packages}"
        )
