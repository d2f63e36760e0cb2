"""Fixtures for the certification in real process groups: one rank pool per world size.

Under torchrun (``python -m sampler_conformance.torchrun``, rank 0) the pools are made of
the ranks torchrun started, on every node; otherwise of local processes.

The pools live for the whole session (a case costs a round trip, not a spawn) and are
closed at its end; ``harness.execution.rank_pool`` also closes them at interpreter exit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache

import pytest

from sampler_conformance.execution.backend import cuda_device_count
from sampler_conformance.execution.rank_pool import RankPool, RankPools
from sampler_conformance.execution.torchrun.pool import started_pools
from sampler_conformance.plugin import option_named, probe, setting, state
from sampler_conformance.subjects import REGISTRY

NCCL_MARK = "nccl"
SEED_EXPERIMENT_WORLD_SIZE = 2


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{NCCL_MARK}: needs one CUDA device per rank (NCCL); skipped with the reason elsewhere"
    )


def world_size_id(world_size: int) -> str:
    """``W2``: a test id that ``-k`` can select (its grammar has no ``=``)."""
    return f"W{world_size}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    sizes = setting(metafunc.config, option_named("world-sizes"))
    if "world_size" in metafunc.fixturenames:
        metafunc.parametrize("world_size", sizes, ids=[world_size_id(w) for w in sizes])
    if "world_size_change" in metafunc.fixturenames:
        changes = [(old, new) for old in sizes for new in sizes if old != new]
        if changes:
            metafunc.parametrize(
                "world_size_change", changes, ids=[f"{world_size_id(old)}to{new}" for old, new in changes]
            )
        else:  # one world size: nothing to change to, said as a skip, never a silent pass
            skip = pytest.mark.skip(reason=f"a change of world size needs two sizes in --world-sizes (got {sizes})")
            metafunc.parametrize(
                "world_size_change", [pytest.param((sizes[0], sizes[0]), marks=skip)], ids=[world_size_id(sizes[0])]
            )


@pytest.fixture(scope="session")
def rank_pools(pytestconfig: pytest.Config) -> Iterator[RankPools]:
    worker_modules = state(pytestconfig).plug.worker_modules
    started = started_pools(pytestconfig)
    if started is not None:  # rank 0 under torchrun: groups of its ranks (sampler_conformance.torchrun closes them)
        started.worker_modules = (
            worker_modules  # made by the torchrun plugin, which knows no plug: told before any group starts
        )
        yield started
        return
    pools = RankPools(timeout_s=setting(pytestconfig, option_named("rank-timeout")), worker_modules=worker_modules)
    yield pools
    pools.close()


@pytest.fixture(scope="session")
def cuda_devices() -> int:
    return cuda_device_count()


def _pool(request: pytest.FixtureRequest, pools: RankPools, world_size: int, cuda_devices: int) -> RankPool:
    requested = (
        "nccl" if request.node.get_closest_marker(NCCL_MARK) else setting(request.config, option_named("backend"))
    )
    choice = pools.choose(requested, world_size, cuda_devices)
    if choice.name is None:
        pytest.skip(str(choice.skip_reason))
    pool = pools.get(world_size, choice.name)
    if state(request.config).plug.needs_process_group:  # the others are probed in-process
        probe(request.config, pool, world_size)
    pool.begin_test()  # after the probe: a case it hung on does not stop this test
    return pool


@pytest.fixture
def group(request: pytest.FixtureRequest, rank_pools: RankPools, world_size: int, cuda_devices: int) -> RankPool:
    """The live process group of ``world_size`` ranks (started on first use)."""
    return _pool(request, rank_pools, world_size, cuda_devices)


@pytest.fixture
def groups(request: pytest.FixtureRequest, rank_pools: RankPools, cuda_devices: int) -> Callable[[int], RankPool]:
    """The live process group of each world size a test asks for (started on first use)."""
    return cache(lambda world_size: _pool(request, rank_pools, world_size, cuda_devices))


@pytest.fixture
def pair(request: pytest.FixtureRequest, rank_pools: RankPools, cuda_devices: int) -> RankPool:
    """A 2-rank group, whatever --world-sizes says: the seed 001 experiment's set-up."""
    return _pool(request, rank_pools, SEED_EXPERIMENT_WORLD_SIZE, cuda_devices)


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
