"""A sampler that refuses part of the seed range is judged on the rest of it: the suite
draws only seeds it accepts (harness.subjects.index_sampler.seed_range), and reports the refusal once, as a
finding, not as a crash charged to edge_sizes."""

from __future__ import annotations

import pytest

from sampler_conformance.execution import simulator
from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT
from sampler_conformance.subjects.index_sampler.contracts import TORCH
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC, load_plug
from sampler_conformance.subjects.index_sampler.seed_range import SEED_LIMIT, SeedRange, probe

from .suite_run import CONFORMANCE, PROPERTIES, certify

RANDOM_STATE = "selftests.corpus.random_state:RandomStateSampler"
# numpy's RandomState refuses seed + epoch >= 2**32; the tests set epochs up to 2**31 + 1.
RANDOM_STATE_REFUSAL = (
    "seed + epoch >= 2**32 is refused: seed=2**32 fails with the sampler raised ValueError while iterating: "
    "Seed must be between 0 and 2**32 - 1; every test draws its seeds below 2**31 - 1 (2147483647), which the "
    "sampler accepts with every epoch the tests set (up to 2**31 + 1)"
)
# torch's generator takes seed + epoch below 2**64: beyond the seeds drawn (below 2**63).
TORCH_REFUSAL = (
    "seed + epoch >= 2**64 is refused: seed=2**64 fails with the sampler raised ValueError while iterating: "
    "Overflow when unpacking long long"
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(RANDOM_STATE, SeedRange(2**31 - 1, RANDOM_STATE_REFUSAL), id="RandomState"),
        pytest.param(DEFAULT_SPEC, SeedRange(SEED_LIMIT, TORCH_REFUSAL), id="DistributedSampler"),
        pytest.param("selftests.corpus.reference:NumpyDistributedSampler", SeedRange(), id="default_rng"),
    ],
)
def test_probe_finds_the_seeds_a_sampler_accepts(spec, expected):
    """np.random.default_rng takes any seed: nothing refused, nothing to report."""
    try:
        assert probe(simulator.SIMULATED, load_plug(spec), TORCH) == expected
    finally:
        simulator.close()


def test_sampler_refusing_large_seeds_conforms_on_the_seeds_it_accepts(pytester):
    run = certify(pytester, RANDOM_STATE, "--world-sizes=1,2", paths=(PROPERTIES, CONFORMANCE))
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    promised = CONTRACTS[DEFAULT_CONTRACT].flags
    assert {run.statuses[flag] for flag in promised} == {"held"}, run.statuses
    # Judged on every case drawn: none set aside for a seed the sampler refuses.
    set_aside = [d for i in run.written["invariants"] for d in i["details"] if "set aside" in d]
    assert not set_aside, set_aside
    assert run.written["findings"] == [RANDOM_STATE_REFUSAL], run.written["findings"]
    assert run.summary.count("finding: ") == 1 and f"finding: {RANDOM_STATE_REFUSAL}" in run.summary, run.explain()
    assert run.verdict.startswith(f"VERDICT: {RANDOM_STATE} conforms to contract 'torch'"), run.verdict
