"""Messages that compare two readings point at where they first differ, and what each holds
there, not at beginnings that may be alike (ms-swift's Megatron random sampler: two plans
shown as "beginning [5, 7, 17] and [5, 7, 17]")."""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import first_difference
from sampler_conformance.subjects.batch_sampler.case import BatchCase
from sampler_conformance.subjects.batch_sampler.checks import check_processes_agree, check_same_plan
from sampler_conformance.subjects.batch_sampler.runs import PlannedEpoch


def test_the_first_difference_is_named_with_both_values():
    assert first_difference(np.array([5, 7, 17, 3]), np.array([5, 7, 17, 4])) == (
        "item 3 differs (the first 3 agree): 3, then 4"
    )
    assert first_difference([np.array([5, 7])], [np.array([5, 7]), np.array([2])], "batch") == (
        "the first 1 batches agree, then only the second goes on, with [2]"
    )


def _plans(*plans: list[list[int]]) -> PlannedEpoch:
    """One reading per process (or per rank) of the same case, each a list of batches."""
    batches = tuple(tuple(np.array(b, dtype=np.int64) for b in plan) for plan in plans)
    items = tuple(np.concatenate(plan) if plan else np.empty(0, np.int64) for plan in batches)
    case = BatchCase(dataset_size=20, world_size=len(plans), lengths=(1,) * 20, epoch=0)
    return PlannedEpoch(Observation(case, items, tuple(map(len, items)), batches=batches), has_set_epoch=True)


def test_plans_that_begin_alike_are_shown_where_they_part():
    (violation,) = check_processes_agree(_plans([[5, 7], [17], [1, 2]], [[5, 7], [17], [1, 3]]), as_rank=0)
    assert "batch 2 differs (the first 2 agree): [1, 2], then [1, 3]" in violation.message, violation.message
    assert "beginning" not in violation.message, violation.message


def test_a_plan_read_twice_names_the_batch_that_changed():
    (violation,) = check_same_plan(_plans([[5, 7], [17]]), _plans([[5, 7], [18]]), "batches_deterministic", "again")
    assert violation.message == "again: rank 0's batch 1 differs (the first 1 agree): [17], then [18]"
