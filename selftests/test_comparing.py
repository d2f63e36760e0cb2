"""Messages that compare two readings point at where they first differ, and what each holds
there, not at beginnings (or ends) that may be alike (ms-swift's Megatron random sampler: two
plans shown as "beginning [5, 7, 17] and [5, 7, 17]"). Every check that finds two readings
apart says it through one helper, ``comparing.first_difference``."""

from __future__ import annotations

import numpy as np

from sampler_conformance.core.case import Observation
from sampler_conformance.core.comparing import check_same_indices, first_difference
from sampler_conformance.core.evidence import shorten
from sampler_conformance.subjects import describe_contracts
from sampler_conformance.subjects.batch_sampler.case import BatchCase
from sampler_conformance.subjects.batch_sampler.checks import check_processes_agree, check_same_plan
from sampler_conformance.subjects.batch_sampler.runs import PlannedEpoch
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.subjects.index_sampler.contracts import BATCH
from sampler_conformance.subjects.index_sampler.elastic_checks import check_global_cursor
from sampler_conformance.subjects.index_sampler.loader_checks import check_loader_yields_sampler
from sampler_conformance.subjects.index_sampler.order_checks import check_ranks_agree
from sampler_conformance.subjects.index_sampler.partition_checks import check_valid_indices
from sampler_conformance.subjects.index_sampler.resume_checks import compare_ranks
from sampler_conformance.subjects.index_sampler.runs import ElasticRun
from sampler_conformance.subjects.iterable_dataset.case import StreamCase
from sampler_conformance.subjects.iterable_dataset.order_checks import check_ranks_agree as check_streams_agree
from sampler_conformance.subjects.iterable_dataset.resume_checks import compare_epochs
from sampler_conformance.subjects.iterable_dataset.runs import StreamEpoch

N = 40
# Two readings alike but at position 20: shortened, both read the same.
ALIKE, PARTED = np.arange(N), np.r_[np.arange(20), 99, np.arange(21, N)]
PARTED_AT_20 = "position 20 is 20 in {} and 99 in {}; positions 0 to 19 agree"


def test_readings_alike_at_both_ends_shorten_alike():
    """Why the difference is named: the readings' beginnings and ends show nothing."""
    assert shorten(ALIKE) == shorten(PARTED)


def test_the_first_difference_is_named_with_both_values():
    assert first_difference(ALIKE, PARTED) == PARTED_AT_20.format("the first reading", "the second")
    assert first_difference([3, 1], [4, 1], readings=("rank 0's process", "rank 1's")) == (
        "position 0 is 3 in rank 0's process and 4 in rank 1's"
    )


def test_a_reading_that_ends_early_is_named_with_what_the_other_goes_on_with():
    short, long = [np.array([5, 7])], [np.array([5, 7]), np.array([2])]
    assert first_difference(short, long, "batch") == (
        "the first reading ends before batch 1, which is [2] in the second; batch 0 agrees"
    )
    assert first_difference(long, short, "batch") == (
        "batch 1 is [2] in the first reading, and the second ends before it; batch 0 agrees"
    )


def _index_observation(*ranks: np.ndarray, batches: tuple[tuple[np.ndarray, ...], ...] | None = None) -> Observation:
    case = IndexCase(dataset_size=N, world_size=len(ranks))
    return Observation(case, tuple(ranks), tuple(map(len, ranks)), batches=batches)


def test_two_readings_of_the_same_ranks_name_where_they_part():
    (violation,) = check_same_indices(_index_observation(ALIKE), _index_observation(PARTED), "deterministic", "again")
    assert violation.message.endswith(PARTED_AT_20.format("the first reading", "the second")), violation.message


def test_ranks_that_disagree_on_the_one_rank_order_name_where_they_part():
    (violation,) = check_ranks_agree([_index_observation(ALIKE), _index_observation(PARTED)])
    assert PARTED_AT_20.format("rank 0's", "rank 1's") in violation.message, violation.message


def test_loader_batches_that_leave_the_sampler_name_where():
    batches = [PARTED[:16], PARTED[16:32], PARTED[32:]]
    (violation,) = check_loader_yields_sampler(0, ALIKE, batches, batch_size=16, drop_last=False)
    assert violation.message.endswith(PARTED_AT_20.format("the sampler's indices", "the batches")), violation.message


def test_a_resumed_sampler_names_where_it_leaves_the_uninterrupted_one():
    (violation,) = compare_ranks("resume_continues", _index_observation(ALIKE), _index_observation(PARTED), "resumed")
    assert violation.message.endswith(PARTED_AT_20.format("the uninterrupted run", "the resumed one"))


def test_a_resumed_batch_sampler_that_cuts_the_same_items_otherwise_names_the_batch():
    """The same indices, cut into other batches: item by item nothing differs."""
    items = np.arange(4)
    expected = _index_observation(items, batches=((items[:2], items[2:]),))
    got = _index_observation(items, batches=((items[:3], items[3:]),))
    (violation,) = compare_ranks("resume_continues", expected, got, "resumed")
    assert violation.message.endswith("batch 0 is [0, 1] in the uninterrupted run and [0, 1, 2] in the resumed one"), (
        violation.message
    )


def test_the_new_ranks_of_an_elastic_run_name_where_they_leave_the_order():
    """W=2 ranks took 2 items each of the order 0..7, and the new ranks go on with 4, 5, 6, 9."""
    case = IndexCase(dataset_size=8, world_size=2, shuffle=False)
    whole = _elastic_observation(case, [0, 2, 4, 6], [1, 3, 5, 7])
    run = ElasticRun(
        epoch=0,
        world_sizes=(2, 2),
        taken=(2,),
        uninterrupted=whole,
        undropped=whole,
        consumed=(_elastic_observation(case, [0, 2], [1, 3]),),
        rest=_elastic_observation(case, [4, 6], [5, 9]),
        missing=(),
    )
    (violation,) = check_global_cursor("elastic_resume_continues", run)
    assert violation.message.endswith(
        "position 3 is 7 in that rest and 9 in what they yield; positions 0 to 2 agree"
    ), violation.message


def _elastic_observation(case: IndexCase, *ranks: list[int]) -> Observation:
    indices = tuple(np.array(r, dtype=np.int64) for r in ranks)
    return Observation(case, indices, tuple(map(len, indices)))


def _plans(*plans: list[list[int]]) -> PlannedEpoch:
    """One reading per process (or per rank) of the same case, each a list of batches."""
    batches = tuple(tuple(np.array(b, dtype=np.int64) for b in plan) for plan in plans)
    items = tuple(np.concatenate(plan) if plan else np.empty(0, np.int64) for plan in batches)
    case = BatchCase(dataset_size=20, world_size=len(plans), lengths=(1,) * 20, epoch=0)
    return PlannedEpoch(Observation(case, items, tuple(map(len, items)), batches=batches), has_set_epoch=True)


def test_plans_that_begin_alike_are_shown_where_they_part():
    (violation,) = check_processes_agree(_plans([[5, 7], [17], [1, 2]], [[5, 7], [17], [1, 3]]), as_rank=0)
    said = "batch 2 is [1, 2] in rank 0's process and [1, 3] in rank 1's; batches 0 and 1 agree"
    assert said in violation.message, violation.message
    assert "beginning" not in violation.message, violation.message


def test_a_plan_read_twice_names_the_batch_that_changed():
    (violation,) = check_same_plan(_plans([[5, 7], [17]]), _plans([[5, 7], [18]]), "batches_deterministic", "again")
    assert violation.message == (
        "again: on rank 0, batch 1 is [17] in the first reading and [18] in the second; batch 0 agrees"
    )


def _stream_epoch(*ranks: list[list[int]]) -> StreamEpoch:
    """One epoch of a stream of 20 ids in one shard, each rank's batches as given."""
    batches = tuple(tuple(np.array(b, dtype=np.int64) for b in rank) for rank in ranks)
    ids = tuple(np.concatenate(rank) for rank in batches)
    case = StreamCase(dataset_size=20, world_size=len(ranks), shard_sizes=(20,), epoch=0)
    observation = Observation(case, ids, tuple(map(len, ids)), batches=batches)
    return StreamEpoch(observation, tuple((0,) * len(rank) for rank in ranks), None, has_set_epoch=True)


def test_a_resumed_stream_names_the_batch_where_it_leaves_the_uninterrupted_one():
    expected, got = _stream_epoch([[0, 1], [2, 3], [4, 5]]), _stream_epoch([[0, 1], [2, 3], [0, 1]])
    (violation,) = compare_epochs("stream_resume_continues", expected, got, "resumed")
    said = "batch 2 is [4, 5] in the uninterrupted run and [0, 1] in the resumed one; batches 0 and 1 agree"
    assert said in violation.message, violation.message


def test_stream_processes_that_disagree_name_where_they_part():
    (violation,) = check_streams_agree(_stream_epoch([[0, 1, 2, 3]], [[0, 1, 3, 2]]))
    assert "position 2 is 2 in rank 0's process and 3 in rank 1's; positions 0 and 1 agree" in violation.message


def test_the_listed_valid_indices_invariant_says_it_charges_empty_batches():
    """valid_indices fails a batch contract's rank that yields [] (a rank past the last global
    batch): --list-contracts says so."""
    batches = ((np.array([0, 1]),), (np.array([2]), np.empty(0, np.int64)))
    empty = _index_observation(np.array([0, 1]), np.array([2]), batches=batches)
    (violation,) = check_valid_indices(empty, BATCH)
    assert violation.message.startswith("rank 1 yielded an empty batch as batch 1"), violation.message
    listed = [line for line in describe_contracts().splitlines() if line.strip().startswith("valid_indices ")]
    assert listed and all("empty batches" in line for line in listed), listed


def test_readings_read_side_by_side_are_named_by_where_they_came_from():
    """Fresh and persistent loader workers (epoch_reaches_workers): not "first ..., then ..."."""
    case = IndexCase(4, 1)
    fresh = Observation(case, (np.array([1, 0, 2, 3]),), (4,))
    kept = Observation(case, (np.array([0, 1, 2, 3]),), (4,))
    (violation,) = check_same_indices(
        fresh, kept, "epoch_reaches_workers", "after set_epoch(1)", ("fresh workers", "persistent workers")
    )
    assert violation.message.startswith(
        "after set_epoch(1): rank 0 yielded [1, 0, 2, 3] through fresh workers and [0, 1, 2, 3] through persistent "
        "workers; position 0 is 1 in fresh workers and 0 in persistent workers"
    ), violation.message
