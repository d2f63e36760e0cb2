"""The verdict is honest: each violation counts against its own invariant, a step the
sampler does not offer is never called, nothing is held vacuously, a sampler's own
KeyboardInterrupt is its fault, and a slow sampler is not a hung one."""

from __future__ import annotations

import re

import pytest

from sampler_conformance.execution import simulator
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.contracts import TORCH
from sampler_conformance.subjects.index_sampler.plug import load_plug
from sampler_conformance.subjects.index_sampler.simulated import observe

from .corpus.faulty import SlowPass
from .suite_run import PROPERTIES, certify

FAULTY = "selftests.corpus.faulty"


def test_a_sampler_without_set_epoch_is_never_charged_for_it_under_the_batch_contract(pytester):
    """The `batch` contract does not promise reshuffling: the DataLoader tests and the rest of
    the whole suite must neither call set_epoch nor charge its absence."""
    spec = "selftests.corpus.families:ShardedBatchesFromGroup"
    run = certify(pytester, spec, "--contract=batch", "--world-sizes=2", ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    assert run.statuses["equal_batches"] == "held" and run.statuses["loader_yields_sampler"] == "held", run.statuses
    assert run.written["verdict"]["state"] == "conforms", run.verdict


def test_a_violation_is_charged_to_its_own_invariant_wherever_it_was_found(pytester):
    """Only the seed and reshuffle tests reach this coverage bug (large epochs): it fails
    covers and disjoint, never seed_effective or reshuffles_on_set_epoch, whose tests
    stopped on it before judging their own invariant."""
    run = certify(pytester, f"{FAULTY}:LateEpochCoverageBug")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert {"test_seed_changes_order", "test_set_epoch_reshuffles"} & run.failed_tests, run.explain()
    assert run.failed_invariants == {"covers", "disjoint"}, run.explain()
    for flag in ("seed_effective", "reshuffles_on_set_epoch"):
        assert run.statuses[flag] in ("held", "not judged"), run.statuses
    assert "[union coverage]" in run.output, run.explain()


def test_nothing_is_held_vacuously_for_a_sampler_without_shuffle(pytester):
    """In real groups, `unshuffled_in_order` needs shuffle=False: for a sampler that cannot
    be given it, the invariant is not applicable (with the reason), never held."""
    run = certify(
        pytester,
        "selftests.corpus.reference:DataPartitionerSampler",
        "--world-sizes=2",
        ranks="groups",
        paths=(PROPERTIES / "test_per_epoch.py",),
    )
    assert run.statuses["unshuffled_in_order"] == "not applicable", run.statuses
    assert "sampler has no `shuffle` parameter" in run.output, run.explain()


def test_a_keyboard_interrupt_raised_by_the_sampler_is_its_fault_and_the_run_goes_on(pytester):
    run = certify(pytester, f"{FAULTY}:RaisesKeyboardInterrupt")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert "the sampler raised KeyboardInterrupt while iterating" in run.output, run.explain()
    assert "edge_sizes" in run.failed_invariants, run.explain()
    assert run.verdict.startswith(f"VERDICT: {FAULTY}:RaisesKeyboardInterrupt does NOT conform"), run.verdict
    assert run.written["verdict"]["state"] == "does not conform"
    assert "INTERRUPTED" not in run.output and "!!! KeyboardInterrupt" not in run.output, run.explain()


def test_rank_timeout_bounds_one_ranks_pass_not_all_ranks_together():
    """W=21 simulated ranks of a correct sampler that takes 0.15 s per pass: 3.2 s for the
    observation, 0.15 s per rank, well inside a 2 s --rank-timeout."""
    timeout_s, world_size = 2.0, 21
    simulator.configure(timeout_s=timeout_s)
    try:
        case = IndexCase(dataset_size=2 * world_size, world_size=world_size)
        observation = observe(load_plug(f"{FAULTY}:SlowPass"), case, TORCH)
    finally:
        simulator.configure(timeout_s=simulator.DEFAULT_TIMEOUT_S)
    assert [len(indices) for indices in observation.indices] == [2] * world_size
    assert world_size * SlowPass.SECONDS_PER_PASS > timeout_s


def test_each_failed_line_names_the_invariant_it_is_charged_to(pytester):
    """A padding bug breaks pads_from_head inside the reshuffle test too: its FAILED line says
    [pads_from_head], so a test whose own invariant held does not read as a failure of its own."""
    run = certify(pytester, "selftests.corpus.known_bad:PadsFromTail", "-k", "reshuffles or pads_from_head")
    lines = [line for line in run.output.splitlines() if line.startswith("FAILED ")]
    assert lines and all(re.match(r"FAILED \[[a-z_, ]+\] ", line) for line in lines), lines
    reshuffles = [line for line in lines if "test_set_epoch_reshuffles" in line]
    assert reshuffles and all(line.startswith("FAILED [pads_from_head] ") for line in reshuffles), lines
    assert run.statuses["reshuffles_on_set_epoch"] == "held", run.explain()


def test_one_kind_of_failure_is_shown_in_full_once(pytester):
    """The same run: the padding bug fails several tests alike; one shows it in full, the others
    in three lines that point to it (before, each printed its whole traceback: 880 lines for
    PadsFromTail's certification, 313 now)."""
    run = certify(pytester, "selftests.corpus.known_bad:PadsFromTail", "-k", "reshuffles or pads_from_head")
    sections = dict(re.findall(r"^_{3,} (\S+) _{3,}\n(.*?)(?=^_{3,} |^={3,} )", run.output, re.M | re.S))
    short = {test: text for test, text in sections.items() if "shows in full above" in text}
    assert short and len(short) < len(sections), run.explain()
    for text in short.values():
        assert not re.search(r"^E ", text, re.M) and "case: N=" in text, text
        (pointed,) = re.findall(r"the same kind of failure as \S+::(\S+) shows in full above", text)
        assert re.search(r"^E ", sections[pointed], re.M), (pointed, run.explain())
