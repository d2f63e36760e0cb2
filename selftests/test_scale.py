"""One rank's cost, measured before the draws (harness/execution/cost.py), and ``+scalable``,
which judges it: the lazy reference conforms, a permutation held whole fails exactly
``cost_follows_share``, and the probe reports a sampler that raises or dies without being
taken down with it."""

from __future__ import annotations

import numpy as np
import pytest

from sampler_conformance.core.case import Observation
from sampler_conformance.core.cost import SIZES, Cost, Reading, growth
from sampler_conformance.execution import cost
from sampler_conformance.subjects import GROUP_ONLY, SUBJECTS, contract_named, subject_of
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.contracts import SamplerContract
from sampler_conformance.subjects.index_sampler.edges import EDGE_SIZES, edge_cases, ranks_read
from sampler_conformance.subjects.index_sampler.layout_checks import check_pads_from_head
from sampler_conformance.subjects.index_sampler.plug import load_plug

from .catalogue import LAZY_REFERENCE, SCALABLE_BAD, SCALABLE_CONTRACT, SCALE_BAD
from .corpus import faulty, lazy_variants
from .reproduced import assert_reproduced
from .suite_run import certify, certify_rejected

IGNORES_EPOCH = f"{lazy_variants.__name__}:LazyIgnoresEpoch"
MB = 1 << 20


@pytest.mark.parametrize("spec", list(SCALE_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_edge_bug_of_another_subject_fails_exactly_its_invariants(pytester, spec):
    """Right at every size the draws reach, wrong past 2^24 weights or ids: found only with
    --scale. A weighted sampler's script reads the 2^24 + 1 weights, and holds against the
    subject's reference; a stream's is not written there, and the run says why."""
    contract = contract_named(SCALE_BAD[spec].under)
    run = certify_rejected(pytester, spec, SCALE_BAD[spec], f"--contract={contract.name}", "--repro=on")
    assert_reproduced(run, subject_of(contract).default_spec)


@pytest.mark.parametrize("spec", list(SCALABLE_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_scale_bug_fails_exactly_its_invariants(pytester, spec):
    run = certify_rejected(pytester, spec, SCALABLE_BAD[spec], f"--contract={SCALABLE_CONTRACT}", "--repro=on")
    assert "it grows with N, not with the rank's share" in run.output, run.explain()
    # Its script measures rank 0 at the smallest and the largest N again, in processes of its own.
    assert_reproduced(run, LAZY_REFERENCE)


def test_the_lazy_reference_conforms_to_torch_scalable_and_says_its_cost(pytester):
    """On simulated ranks (what only real groups check is not run there): every invariant held."""
    run = certify(pytester, LAZY_REFERENCE, f"--contract={SCALABLE_CONTRACT}", "--production-size=3.5e9")
    assert run.exit_code == 0 and run.verdict.startswith("PARTIAL: no failure"), run.explain()
    assert {flag for flag, status in run.statuses.items() if status not in ("held", "not promised")} == {
        flag for flag in GROUP_ONLY if contract_named(SCALABLE_CONTRACT).promises(flag)
    }, run.statuses
    assert run.statuses["cost_follows_share"] == "held"
    recorded = run.written["cost"]
    assert recorded["on_world"][-1]["size"] == SIZES[-1], recorded  # flat: every size measured, to 1e10
    assert recorded["projected"]["size"] == 3.5e9 and recorded["projected"]["world_size"] == 1024
    assert any(line.startswith("projected at N=3.5e9, W=1,024: under") for line in recorded["summary"]), recorded


def _readings(*figures: tuple[int, int, float]) -> list[Reading]:
    """Readings at N = 1e4, 1e5, ...: (W, peak MB, first seconds) each."""
    return [
        Reading(10 ** (4 + k), world, peak_bytes=int(peak * MB), first_s=first)
        for k, (world, peak, first) in enumerate(figures)
    ]


def test_a_cost_that_grows_with_n_at_a_fixed_share_is_told_apart_from_one_that_grows_with_the_share():
    """Whole: memory tenfold a decade on W=8 and at a fixed share alike. Share: tenfold on
    W=8, flat at a fixed share. Only the first grows with N; each projects by its own law."""
    whole = Cost(
        on_world=_readings((8, 1, 0.001), (8, 10, 0.01), (8, 100, 0.1), (8, 1000, 1.0)),
        at_share=_readings((10, 1, 0.001), (100, 10, 0.01), (1000, 100, 0.1), (10_000, 1000, 1.0)),
    )
    share = Cost(
        on_world=whole.on_world,
        at_share=_readings((10, 1, 0.001), (100, 1, 0.001), (1000, 1, 0.001), (10_000, 1, 0.001)),
    )
    fitted = growth(whole.on_world, "peak_bytes")
    assert fitted is not None and fitted.exponent == pytest.approx(1.0)
    assert whole.grows_with_n() is not None and share.grows_with_n() is None
    # At 1e9 on 1,024 ranks: whole grows with N (100x from 1e7), share with N/W (1e9/1024 against 1e7/8: 0.78x).
    assert whole.projected(1e9, 1024)[0] == pytest.approx(1000 * MB * 100)
    assert share.projected(1e9, 1024)[0] == pytest.approx(1000 * MB * (1e9 / 1024) / (1e7 / 8))


def test_a_short_span_at_a_fixed_share_judges_nothing():
    short = Cost(on_world=_readings((8, 1, 0.001)), at_share=_readings((10, 3000, 3.0)))
    assert not short.judged_span() and short.grows_with_n() is None
    assert "past the probe's budget" in short.why_short()


def test_the_sweep_at_a_fixed_share_measures_its_span_however_steep_its_first_sizes(monkeypatch):
    """As a loaded CI machine measured HoldsWholePermutation: 3 ms at N=1e4, 113 ms at 1e5,
    which projects 1e6 past four budgets. On W=8 the projection ends the sweep; at a fixed
    share N=1e6 is measured all the same, for the span its judgment needs, and no further."""
    first_s = {10**4: 0.003, 10**5: 0.113, 10**6: 1.2, 10**7: 12.0}
    monkeypatch.setattr(
        cost, "measure", lambda probed, size, world, whole=False: Reading(size, world, 0, first_s[size])
    )
    measured = cost.sweeps(_probed(LAZY_REFERENCE), (0, 0))
    assert [r.size for r in measured["on_world"]] == [10**4, 10**5]
    assert [r.size for r in measured["at_share"]] == [10**4, 10**5, 10**6]
    assert Cost(measured["on_world"], measured["at_share"]).grows_with_n() is not None


def test_the_sweep_at_a_fixed_share_goes_on_while_its_growth_is_undecided(monkeypatch):
    """As CI measured HoldsWholePermutation: 56 MB and 0.24 s at N=1e6, grown tenfold from
    1e4 but just under both charged figures, after 20 ms at 1e5, which projects 1e7 past
    four budgets. Cut there, it held; measured at 1e7 (537 MB, 3.4 s), it fails."""
    figures = {10**4: (3 * MB, 0.005), 10**5: (8 * MB, 0.02), 10**6: (56 * MB, 0.24), 10**7: (537 * MB, 3.4)}
    monkeypatch.setattr(cost, "measure", lambda probed, size, world, whole=False: Reading(size, world, *figures[size]))
    at_share = cost.sweeps(_probed(LAZY_REFERENCE), (0, 0))["at_share"]
    assert [r.size for r in at_share] == [10**4, 10**5, 10**6, 10**7]
    assert Cost([], at_share[:3]).grows_with_n() is None  # where the projection had cut it
    assert Cost([], at_share).grows_with_n() is not None


@pytest.mark.parametrize(
    ("bad", "size", "said"),
    [
        (faulty.RaisesTwoWays, 10_000, "the sampler raised TypeError: " + faulty.COMPARE_ERROR),
        (faulty.KillsItsProcess, faulty.KillsItsProcess.DEADLY_SIZE, "the process died (exit code 3)"),
    ],
    ids=["raises", "dies"],
)
def test_the_probe_reports_a_sampler_that_raises_or_dies_and_goes_on(bad, size, said):
    reading = cost.measure(_probed(f"{faulty.__name__}:{bad.__name__}"), size, 1)
    assert reading.stopped == said and reading.peak_bytes is None, reading
    assert cost.measure(_probed(LAZY_REFERENCE), 10_000, 8).first_s is not None  # the next size is measured


@pytest.mark.parametrize("name", ["stream", "stream_mix", "dynamic_batches", "micro_batches", "poisson"])
def test_the_probe_reads_a_whole_pass_of_every_subject(name):
    """Streams (files written to the probe's own folder) and batch samplers, as index samplers."""
    contract = contract_named(name)
    subject = subject_of(contract)
    assert subject.cost_probe is not None
    probed = cost.Probed(contract.reference or subject.default_spec, contract, subject.load, subject.cost_probe)
    reading = cost.measure(probed, 10_000, 8, whole=True)
    assert not reading.stopped and reading.further > 0, reading
    assert reading.first_s is not None and reading.pass_s is not None and reading.pass_s >= reading.first_s, reading


def _probed(spec: str) -> cost.Probed:
    subject = SUBJECTS["index_sampler"]
    assert subject.cost_probe is not None
    return cost.Probed(spec, contract_named("torch"), subject.load, subject.cost_probe)


def test_the_edges_build_only_the_cases_the_sampler_takes():
    """A sampler without drop_last (mmengine's DefaultSampler) is built without it: a case with
    drop_last=True would judge its padding by the truncating rule (the first scale table
    charged two real samplers equal_length so)."""
    takes_all = load_plug(LAZY_REFERENCE)
    no_drop_last = load_plug(f"{faulty.__name__}:requires_its_rank")
    assert {(c.shuffle, c.drop_last) for c in edge_cases(2**24 + 1, takes_all)} == {
        (True, False),
        (True, True),
        (False, False),
        (False, True),
    }
    assert all(not case.drop_last for case in edge_cases(2**24 + 1, no_drop_last))


@pytest.mark.parametrize("layout", ["strided", "contiguous"])
@pytest.mark.parametrize("size", [10_007, 33, 9])  # past W, a few head copies, fewer items than ranks
def test_padding_judged_on_the_ranks_read_agrees_with_the_whole_reading(layout, size):
    """pads_from_head on a partial reading (the ranks edges.ranks_read picks) fails exactly where
    the whole reading fails: padded from the head, from the tail, or the head shifted by one."""
    world = 16
    case = IndexCase(size, world, shuffle=True, drop_last=False)
    contract = contract_named("torch" if layout == "strided" else "contiguous")
    assert isinstance(contract, SamplerContract) and contract.layout == layout
    order = np.random.default_rng(size).permutation(size)
    total = -(-size // world) * world
    pads = {
        "head": np.resize(order, total),
        "tail": np.concatenate([order, np.resize(order[::-1], total - size)[::-1]]),
        "shifted": np.concatenate([order, np.resize(np.roll(order, -1), total - size)]),
    }
    for how, padded in pads.items():
        shares = [padded[r::world] if layout == "strided" else padded.reshape(world, -1)[r] for r in range(world)]
        whole = Observation(case, tuple(shares), ())
        read = ranks_read(case)
        part = Observation(case, tuple(shares[r] for r in read), (), ranks=read)
        fails_whole, fails_part = (bool(check_pads_from_head(o, contract)) for o in (whole, part))
        assert fails_whole == (how != "head"), (how, check_pads_from_head(whole, contract))
        assert fails_part == fails_whole, (how, read, check_pads_from_head(part, contract))


def test_the_order_at_the_edges_fails_a_sampler_that_ignores_the_epoch(pytester):
    """Read on the first and last of 16,384 ranks, at 2^24 + 1, 2^31 + 1 and 2^32 + 1, at two epochs:
    the same order at each edge. (The same reading judges ``deterministic`` from fresh samplers.)"""
    run = certify(pytester, IGNORES_EPOCH, "--scale", "-k", "order_at_the_numeric_edge and reshuffles")
    assert run.statuses["reshuffles_on_set_epoch"] == "failed", run.explain()
    assert sorted(run.failed_test_ids) == [
        f"test_order_at_the_numeric_edge[reshuffles_on_set_epoch-N{size}]" for size in sorted(EDGE_SIZES)
    ], run.explain()
