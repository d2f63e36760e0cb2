"""In-process, the sampler runs in a supervised process: a sampler that blocks fails the run
within --rank-timeout, and one that kills its process (os._exit, a segfault) fails one
invariant with the case and the exit status; neither hangs nor ends the run."""

from __future__ import annotations

import pytest

from .corpus.faulty import AllocatesWithoutBound, KillsItsProcess, Segfaults
from .suite_run import certify

FAULTY = "selftests.corpus.faulty"

BLOCKING_SAMPLER = """
import time
from torch.utils.data import DistributedSampler

class BlocksOnLargeDatasets(DistributedSampler):
    def __iter__(self):
        if len(self.dataset) > 3:
            time.sleep(3600)  # a deadlock, as far as the suite can tell
        return super().__iter__()
"""


def test_blocking_sampler_fails_within_the_timeout_with_its_stack(pytester):
    pytester.makepyfile(blocking=BLOCKING_SAMPLER)
    run = certify(
        pytester,
        f"{pytester.path / 'blocking.py'}:BlocksOnLargeDatasets",
        "--rank-timeout=2",
        "-k",
        "len_matches or equal_length or batch_counts",
        timeout=120,
    )
    assert run.exit_code == 1, run.explain()
    assert "did not finish within 2 s (--rank-timeout) of its last call into the sampler; it hangs" in run.output, (
        run.explain()
    )
    assert "time.sleep(3600)" in run.output, run.explain()  # the sampler's own frame
    # Later tests fail at once instead of each waiting out the timeout again.
    assert "the sampler hung earlier in this session on case" in run.output, run.explain()


@pytest.mark.parametrize(
    ("sampler", "deadly_size", "death"),
    [
        ("KillsItsProcess", KillsItsProcess.DEADLY_SIZE, f"exited with code {KillsItsProcess.EXIT_STATUS}"),
        ("Segfaults", Segfaults.DEADLY_SIZE, "killed by signal SIGSEGV (exit code -11)"),
    ],
)
def test_a_sampler_that_kills_its_process_is_one_finding_and_the_run_goes_on(pytester, sampler, deadly_size, death):
    run = certify(pytester, f"{FAULTY}:{sampler}")
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED, run.explain()
    assert run.verdict.startswith(f"VERDICT: {FAULTY}:{sampler} does NOT conform"), (
        run.explain()
    )  # printed: the run went on
    # One finding: the death, charged to edge_sizes; every other invariant judged on the other cases.
    assert run.failed_invariants == {"edge_sizes"}, run.explain()
    assert run.statuses["covers"] == "held" and run.statuses["deterministic"] == "held", run.statuses
    smallest = run.counterexamples("edge_sizes")[0]
    assert smallest["parameters"]["dataset_size"] == deadly_size, smallest
    assert death in smallest["message"] and "inside a call into the sampler" in smallest["message"], smallest
    if sampler == "Segfaults":  # a fatal signal leaves the sampler's last frames (faulthandler)
        assert "faulty.py" in smallest["detail"] and "in __iter__" in smallest["detail"], smallest
        assert "ctypes.string_at(0)" in smallest["detail"], smallest


def test_a_sampler_that_allocates_without_bound_is_stopped_at_the_memory_budget(pytester):
    """Without the budget it would take the machine's memory; with --memory-budget=1 its
    process stops at 1 GiB above its start, the fault says so, and the run goes on."""
    run = certify(pytester, f"{FAULTY}:AllocatesWithoutBound", "--memory-budget=1", "-k", "test_edge_sizes")
    assert run.exit_code == 1 and run.failed_invariants == {"edge_sizes"}, run.explain()
    faults = run.counterexamples("edge_sizes")
    assert faults and all(f"N={AllocatesWithoutBound.DEADLY_SIZE}," in fault["case"] for fault in faults), faults
    for fault in faults:
        assert "raised MemoryError" in fault["message"], fault
        assert "reached the suite's memory budget, 1.0 GiB above its start" in fault["message"], fault
