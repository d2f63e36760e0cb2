"""A sampler that refuses part of the seed range is judged on the rest of it: the suite
draws only seeds it accepts (harness.subjects.index_sampler.seed_range), and reports the refusal once, as a
finding, not as a crash set aside in every test. Seeds the reference (DistributedSampler)
accepts may only be refused when the sampler is built: one that takes them and raises at a
later epoch fails edge_sizes, once."""

from __future__ import annotations

import pytest

from sampler_conformance.execution import simulator
from sampler_conformance.subjects import CONTRACTS, DEFAULT_CONTRACT
from sampler_conformance.subjects.index_sampler.contracts import TORCH
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC, load_plug
from sampler_conformance.subjects.index_sampler.seed_range import SEED_LIMIT, SeedRange, probe

from .suite_run import certify

RANDOM_STATE = "selftests.corpus.random_state:RandomStateSampler"
REFUSED_AT_CONSTRUCTION = "selftests.corpus.random_state:RandomStateRefusedAtConstruction"
# numpy's RandomState refuses seed + epoch >= 2**32; the tests set epochs up to 2**31 + 1.
RANDOM_STATE_REFUSAL = (
    "seed + epoch >= 2**32 is refused: seed=2**32 fails with the sampler raised ValueError while iterating: "
    "Seed must be between 0 and 2**32 - 1; every test draws its seeds below 2**31 - 1 (2147483647), which the "
    "sampler accepts with every epoch the tests set (up to 2**31 + 1)"
)
# Seeds of 2**32 and more refused by the constructor: every epoch runs for the seeds it takes.
CONSTRUCTION_REFUSAL = (
    "seeds of 2**32 and more are refused: seed=2**32 fails with the sampler raised ValueError in its constructor "
    "(num_replicas=W, rank=RANK): seed must be in [0, 2**32), numpy's RandomState range; got 4294967296; every "
    "test draws its seeds below 2**32 (4294967296), which the sampler accepts with every epoch the tests set (up "
    "to 2**31 + 1)"
)
# torch's generator takes seed + epoch below 2**64: beyond the seeds drawn (below 2**63).
TORCH_REFUSAL = (
    "seed + epoch >= 2**64 is refused: seed=2**64 fails with the sampler raised ValueError while iterating: "
    "Overflow when unpacking long long"
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            RANDOM_STATE,
            SeedRange(
                2**31 - 1,
                RANDOM_STATE_REFUSAL,
                (
                    2**31 - 1,
                    2**31 + 1,
                    "the sampler raised ValueError while iterating: Seed must be between 0 and 2**32 - 1",
                ),
            ),
            id="RandomState",
        ),
        pytest.param(REFUSED_AT_CONSTRUCTION, SeedRange(2**32, CONSTRUCTION_REFUSAL), id="refused_at_construction"),
        pytest.param(
            DEFAULT_SPEC,
            SeedRange(
                SEED_LIMIT, TORCH_REFUSAL, (2**64 - 2**31 - 1, 2**31 + 1, TORCH_REFUSAL.split(" fails with ")[1])
            ),
            id="DistributedSampler",
        ),
        pytest.param("selftests.corpus.reference:NumpyDistributedSampler", SeedRange(), id="default_rng"),
    ],
)
def test_probe_finds_the_seeds_a_sampler_accepts(spec, expected):
    """np.random.default_rng takes any seed: nothing refused, nothing to report."""
    try:
        assert probe(simulator.SIMULATED, load_plug(spec), TORCH) == expected
    finally:
        simulator.close()


def test_sampler_refusing_seeds_late_fails_edge_sizes_alone(pytester):
    """Judged on the seeds it accepts (nothing set aside), the refusal a finding, and charged
    once, by the seed-range test, for refusing after construction what the reference takes."""
    run = certify(pytester, RANDOM_STATE)
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert run.failed_tests == {"test_seeds_the_reference_accepts"}, run.explain()
    (counterexample,) = run.counterexamples("edge_sizes")
    assert counterexample["message"].startswith(
        "seed=2**31 - 1 is accepted when the sampler is built, then refused after set_epoch(2**31 + 1): the sampler "
        "raised ValueError while iterating: Seed must be between 0 and 2**32 - 1. The contract's reference "
        "(torch.utils.data.distributed:DistributedSampler) takes every seed below 2**63"
    ), counterexample
    set_aside = [d for i in run.written["invariants"] for d in i["details"] if "set aside" in d]
    assert not set_aside, set_aside
    assert run.written["findings"] == [RANDOM_STATE_REFUSAL], run.written["findings"]


def test_sampler_refusing_large_seeds_when_built_conforms_on_the_seeds_it_accepts(pytester):
    run = certify(pytester, REFUSED_AT_CONSTRUCTION, "--world-sizes=1,2", ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    promised = CONTRACTS[DEFAULT_CONTRACT].flags
    assert {run.statuses[flag] for flag in promised} == {"held"}, run.statuses
    # Judged on every case drawn: none set aside for a seed the sampler refuses.
    set_aside = [d for i in run.written["invariants"] for d in i["details"] if "set aside" in d]
    assert not set_aside, set_aside
    assert run.written["findings"] == [CONSTRUCTION_REFUSAL], run.written["findings"]
    assert run.summary.count("finding: ") == 1 and f"finding: {CONSTRUCTION_REFUSAL}" in run.summary, run.explain()
    assert run.verdict.startswith(f"VERDICT: {REFUSED_AT_CONSTRUCTION} conforms to contract 'torch'"), run.verdict
