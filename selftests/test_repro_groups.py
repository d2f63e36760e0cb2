"""A reproduction script that reads the ranks in a real gloo group, or each in a fresh
interpreter (``common/repro_groups.py``), never hangs and never leaves a process behind: a rank
that hangs is reported by rank once the script's bound has passed, killed and reaped, and the
script exits 2, neither the bug shown nor the promise held."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sampler_conformance.subjects.common.repro_groups import (
    GROUP_IMPORTS,
    PROCESS_IMPORTS,
    RANKS_FAILED,
    fresh_processes,
    guarded,
    run_ranks,
)
from sampler_conformance.subjects.common.repro_script import imports
from sampler_conformance.subjects.index_sampler.plug import DEFAULT_SPEC

from .reproduced import assert_reproduced
from .suite_run import certify
from .test_rank_pool import MULTIPROCESS_BAD, _assert_no_orphans, tag  # noqa: F401 (tag: the fixture that marks the script's processes)

# The script's bound: rank 0 too may not answer within it on a busy machine, which is reported as well.
BOUND_S = 3
STARTING_S = 10  # what `python SCRIPT` takes to import torch and start its ranks, on a busy machine

# Rank 1 of a group of 2 never answers; rank 0 reads at once.
HANGING = """
def read_in_group(world, rank):
    if rank == 1:
        time.sleep(600)
    return [rank]
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the script's processes in Linux /proc")
def test_a_rank_that_hangs_is_reported_killed_and_reaped_within_the_bound(tmp_path, tag):  # noqa: F811
    script = tmp_path / "hangs.py"
    main = 'ranks = run_ranks(2)\nprint("held: every rank answered", ranks)'
    script.write_text("\n\n".join([imports(GROUP_IMPORTS), HANGING, run_ranks(timeout_s=BOUND_S), guarded(main)]))
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=BOUND_S + STARTING_S + 30
    )
    took = time.monotonic() - start
    assert run.returncode == RANKS_FAILED, run
    assert f"rank 1 hung: no reading within {BOUND_S} s" in run.stdout and "held: " not in run.stdout, run
    assert took < BOUND_S + STARTING_S, f"the script took {took:.1f} s, its bound {BOUND_S} s"
    _assert_no_orphans(tag)  # both ranks ended with it


# Rank 1's fresh interpreter never answers; rank 0's reads at once.
HANGING_PROCESS = """SPEC, HASH_SEEDS = "no spec", [1, 2]


def read(rank):
    if rank == 1:
        time.sleep(600)
    return [rank]
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the script's processes in Linux /proc")
def test_a_fresh_process_that_hangs_is_reported_killed_and_reaped_within_the_bound(tmp_path, tag):  # noqa: F811
    script = tmp_path / "hangs.py"
    main = (
        "if RANK_OF_PROCESS:\n    in_process_of_rank(read)\n"
        'readings = start_processes(range(2))\nprint("held: every process answered", readings)'
    )
    parts = [imports(PROCESS_IMPORTS), HANGING_PROCESS, fresh_processes(timeout_s=BOUND_S), guarded(main)]
    script.write_text("\n\n".join(parts))
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=BOUND_S + STARTING_S + 30
    )
    took = time.monotonic() - start
    assert run.returncode == RANKS_FAILED, run
    assert f"rank 1's process hung: no reading within {BOUND_S} s" in run.stdout and "held: " not in run.stdout, run
    assert took < BOUND_S + STARTING_S, f"the script took {took:.1f} s, its bound {BOUND_S} s"
    _assert_no_orphans(tag)  # both processes ended with it


def test_an_order_only_separate_interpreters_make_apart_is_reproduced_in_fresh_processes(pytester):
    """HashSeededShuffle seeds its shuffle with hash() of a str: forks of one process share its
    hash seed and agree, as a script's forked group would. Its agrees_across_ranks script reads
    each rank in a fresh interpreter with the hash seed the suite gave that rank's process,
    joined in one gloo group, as torchrun starts a job's: it exits 1, and 0 against torch's."""
    run = certify(
        pytester,
        f"{MULTIPROCESS_BAD}:HashSeededShuffle",
        "--world-sizes=2",
        "-k",
        "agree",
        "--repro=on",
        ranks="groups",
    )
    assert run.exit_code == pytest.ExitCode.TESTS_FAILED and run.failed_invariants == {"agrees_across_ranks"}, (
        run.explain()
    )
    assert_reproduced(run, DEFAULT_SPEC, read_in_groups={"agrees_across_ranks"})
