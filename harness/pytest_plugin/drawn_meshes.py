"""Device meshes drawn by Hypothesis (``--meshes=drawn4``): for every example, the dimensions
of a mesh of the variant's world size, their sizes and their order.

A test body draws its case from ``ranks.world_size``, which on a mesh is the data-parallel
size; so the ranks draw the mesh, on the example's first question, and keep it for the rest
of the example. The draw goes to the running example's own data (Hypothesis's build context),
so it is replayed, shrunk (towards a mesh of data parallelism alone, then towards the
dimensions' order as written) and shown with the counterexample as a "Draw (device mesh)" line.
"""

from __future__ import annotations

from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.control import current_build_context

from sampler_conformance.execution.mesh import (
    DRAWN_NOTE,
    MOST_RANKS_PER_DIMENSION,
    DrawnMeshes,
    MeshLayout,
    MeshRanks,
)
from sampler_conformance.execution.scenario import Scenario

# The dimensions a mesh is drawn from, simplest first (Hypothesis shrinks towards the first):
# the data dimensions as one (dp) or as replicate x shard, and then the others.
DATA_NAMES = (("dp",), ("dp_replicate", "dp_shard"))
OTHER_NAMES = ("tp", "cp", "pp")


def prime_factors(number: int) -> list[int]:
    factors, divisor = [], 2
    while number > 1:
        while number % divisor == 0:
            factors.append(divisor)
            number //= divisor
        divisor += 1
    return factors


@st.composite
def mesh_layouts(draw: st.DrawFn, world_size: int) -> MeshLayout:
    """A mesh of ``world_size`` ranks: each prime factor of it goes to a dimension (the first to
    a data dimension), a dimension of at most 4 ranks; the dimensions in a drawn order."""
    data_names = draw(st.sampled_from(DATA_NAMES))
    sizes: dict[str, int] = {}
    for k, factor in enumerate(prime_factors(world_size) or [1]):
        name = draw(st.sampled_from(data_names if k == 0 else data_names + OTHER_NAMES))
        sizes[name] = sizes.get(name, 1) * factor
    if max(sizes.values()) > MOST_RANKS_PER_DIMENSION:  # 8 ranks in one dimension: give the last factor away
        name = max(sizes, key=sizes.__getitem__)
        sizes[name] //= 2
        sizes[draw(st.sampled_from([n for n in data_names + OTHER_NAMES if n != name]))] = 2
    order = draw(st.permutations(list(sizes)))
    return MeshLayout.parse(".".join(f"{name}{sizes[name]}" for name in order))


class DrawnMeshRanks:
    """The ranks of a real group of ``meshes.world_size``, laid out on a mesh drawn for each
    example; otherwise :class:`MeshRanks` on that mesh."""

    def __init__(self, pool: Any, meshes: DrawnMeshes) -> None:
        self.pool = pool
        self.meshes = meshes
        self._drawn: tuple[object, MeshRanks] | None = None  # (the example's build context, its mesh)

    @property
    def answering(self) -> MeshRanks:
        """The ranks of this example's mesh (``scenario.ask`` keeps replies per them)."""
        return self._ranks()

    def _ranks(self) -> MeshRanks:
        context = current_build_context()  # raises outside an example: the plugin draws only for Hypothesis tests
        if self._drawn is None or self._drawn[0] is not context:
            layout = context.data.draw(mesh_layouts(self.meshes.world_size))
            note(f"{DRAWN_NOTE}{layout.id}")
            self._drawn = (context, MeshRanks.on(self.pool, layout))
        return self._drawn[1]

    @property
    def world_size(self) -> int:
        return self._ranks().world_size

    @property
    def group_is_data_parallel(self) -> bool:
        return False

    def request(self, scenario: Scenario) -> list[Any]:
        __tracebackhide__ = True  # failures point at the sampler, not the harness
        return self._ranks().request(scenario)

    def __repr__(self) -> str:
        return f"<meshes {self.meshes.id} drawn over {self.pool!r}>"
