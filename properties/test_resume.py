"""The resumable extension (``--contract=BASE+resumable``), in-process.

Each test draws a case, an epoch and where the checkpoint is taken (k = 0 and k = the
whole pass weighted), and runs the protocol of docs/resume-and-elastic.md, "The resume
protocol" (``harness.subjects.index_sampler.scenarios.resume``) on every simulated rank.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sampler_conformance.core.evidence import expect_holds, fail
from sampler_conformance.execution.simulator import SIMULATED
from sampler_conformance.pytest_plugin.crashes import judge_only_if
from sampler_conformance.subjects.index_sampler.draws import small_seeds
from sampler_conformance.subjects.index_sampler.resume_checks import (
    LEN_COUNTS_THE_EPOCH,
    check_continues,
    check_exactly_once,
    check_next_passes,
    check_not_plain,
    compare_ranks,
    expect_stateful,
    items,
    joined,
    len_counts_the_epoch,
    missing_protocol,
)
from sampler_conformance.subjects.index_sampler.resume_draws import (
    GLOBAL_SEEDS,
    checkpoint_at,
    drawn,
    other_world_size,
    pass_items,
)
from sampler_conformance.subjects.index_sampler.resume_labels import (
    BETWEEN_CHECKPOINTS_LABEL,
    CHANGED_LABEL,
    CHECKPOINT_LABEL,
    FIRST_CHECKPOINT_LABEL,
    GLOBAL_SEED_LABEL,
    OTHER_SEED_LABEL,
    OTHER_SIZE_LABEL,
    OTHER_WORLD_LABEL,
)
from sampler_conformance.subjects.index_sampler.scenarios.resume import foreign_state_refusal, resume
from sampler_conformance.subjects.index_sampler.seed_range import seed_limit


@pytest.mark.invariant("resume_continues")
@given(data=st.data())
def test_resume_continues_the_epoch(sampler_plug, contract, drop_last, data, report_finding, request):
    """Resumed after k items, every rank yields exactly the rest of its uninterrupted epoch.
    Where len() before that rest counts the whole epoch, the run says so (a finding)."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    k = checkpoint_at(data, pass_items(contract, case))
    run = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(k,))
    expect_stateful(run, "resume_continues")
    expect_holds(run.uninterrupted[0], check_continues(run))
    if len_counts_the_epoch(run):
        report_finding(request.node.nodeid, LEN_COUNTS_THE_EPOCH)


@pytest.mark.invariant("resume_exactly_once")
@given(data=st.data())
def test_resume_yields_each_item_once(sampler_plug, contract, drop_last, data):
    """Across the ranks, the resumed epoch repeats nothing and loses nothing the
    uninterrupted epoch yields (its padding is allowed, no more)."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    k = checkpoint_at(data, pass_items(contract, case))
    run = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(k,))
    expect_stateful(run, "resume_exactly_once")
    expect_holds(run.uninterrupted[0], check_exactly_once(run, case.dataset_size))


@pytest.mark.invariant("resume_at_boundaries")
@given(data=st.data())
def test_resume_at_the_epochs_boundaries(sampler_plug, contract, drop_last, data):
    """A state taken before the epoch's first item resumes the whole epoch; one taken after
    its pass ended resumes at the next epoch, in full (neither empty nor a replay), and the
    one after it."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    at_start = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(0,))
    expect_stateful(at_start, "resume_at_boundaries")
    expect_holds(
        at_start.uninterrupted[0],
        compare_ranks(
            "resume_at_boundaries",
            at_start.uninterrupted[0],
            joined(at_start),
            f"resumed from a state taken before the first item of epoch {epoch}, the epoch differs from the "
            f"uninterrupted one",
        ),
    )
    at_end = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, after_pass=True, later_epochs=1)
    expect_holds(
        at_end.uninterrupted[0],
        check_next_passes(
            "resume_at_boundaries",
            at_end,
            f"resumed from a state taken after the pass of epoch {epoch} ended (the loop goes on at epoch {epoch + 1})",
        ),
    )


@pytest.mark.invariant("later_epochs_after_resume")
@given(data=st.data())
def test_later_epochs_after_a_resume(sampler_plug, contract, drop_last, data):
    """After a resume, the next two epochs are the uninterrupted run's: the skip does not
    persist, and the epoch and seed are right."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    k = checkpoint_at(data, pass_items(contract, case))
    run = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(k,), later_epochs=2)
    expect_stateful(run, "later_epochs_after_resume")
    expect_holds(
        run.uninterrupted[0],
        check_next_passes("later_epochs_after_resume", run, f"resumed after {items(k)} of epoch {epoch}"),
    )


@pytest.mark.invariant("resumes_compose")
@given(data=st.data())
def test_two_resumes_compose(sampler_plug, contract, drop_last, data):
    """Resumed at k, then again at k + j within the epoch: the rest is what one resume at
    k + j gives."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    length = pass_items(contract, case)
    judge_only_if(length >= 1)
    first = checkpoint_at(data, length - 1, label=FIRST_CHECKPOINT_LABEL)
    more = data.draw(st.integers(1, length - first), label=BETWEEN_CHECKPOINTS_LABEL)
    twice = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(first, first + more))
    expect_stateful(twice, "resumes_compose")
    once = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(first + more,))
    expect_holds(
        twice.uninterrupted[0],
        compare_ranks(
            "resumes_compose",
            once.resumed[0],
            twice.resumed[0],
            f"resumed after {items(first)} of epoch {epoch}, then again {items(more)} later, the rest differs "
            f"from one resume after {items(first + more)}",
        ),
    )


@pytest.mark.invariant("plain_state")
@given(data=st.data())
def test_state_is_plain_data(sampler_plug, contract, drop_last, data):
    """The state survives torch.save/torch.load(weights_only=True); loading a just-built
    sampler's state changes nothing; a resume does not depend on the global RNGs."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    k = checkpoint_at(data, pass_items(contract, case))
    global_seed = data.draw(GLOBAL_SEEDS, label=GLOBAL_SEED_LABEL)
    run = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, cuts=(k,), global_seed=global_seed)
    expect_stateful(run, "plain_state")
    expect_holds(run.uninterrupted[0], check_not_plain(run))
    reseeded = resume(
        SIMULATED,
        sampler_plug,
        contract,
        case,
        epoch=epoch,
        cuts=(k,),
        global_seed=global_seed,
        resumed_global_seed=global_seed + 1,
    )
    expect_holds(
        run.uninterrupted[0],
        compare_ranks(
            "plain_state",
            run.resumed[0],
            reseeded.resumed[0],
            f"resumed after {items(k)} of epoch {epoch} twice, the global RNGs (torch, numpy, random) reseeded "
            f"between the two, the rest differs: the resumed order depends on global RNG state",
        ),
    )
    fresh = resume(SIMULATED, sampler_plug, contract, case, epoch=epoch, fresh_state=True, later_epochs=1)
    expect_holds(
        fresh.uninterrupted[0],
        compare_ranks(
            "plain_state",
            fresh.uninterrupted[0],
            fresh.resumed[0],
            f"a fresh sampler that loaded the state of another just built (before set_epoch and any item) gave "
            f"another epoch {epoch} than one that loaded nothing",
        )
        + check_next_passes("plain_state", fresh, "after loading a just-built sampler's state"),
    )


# The arguments a state may be saved under, and how to change each (a seed, to one the sampler accepts).
_STALE_CHANGES = {
    "dataset size": lambda case, data, plug: case.with_(
        dataset_size=data.draw(
            st.integers(max(case.world_size, 1), case.dataset_size + 64).filter(lambda n: n != case.dataset_size),
            label=OTHER_SIZE_LABEL,
        )
    ),
    "seed": lambda case, data, plug: case.with_(
        seed=data.draw(small_seeds(seed_limit(plug)).filter(lambda s: s != case.seed), label=OTHER_SEED_LABEL)
    ),
    "shuffle": lambda case, data, plug: case.with_(shuffle=not case.shuffle),
    "drop_last": lambda case, data, plug: case.with_(drop_last=not case.drop_last),
}


@pytest.mark.invariant("stale_state_refused")
@given(data=st.data())
def test_stale_state_refused(sampler_plug, contract, drop_last, data):
    """A state saved under another dataset size, seed, shuffle or drop_last raises, at
    load_state_dict or at the first item, instead of resuming at the wrong items."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    length = pass_items(contract, case)
    judge_only_if(length >= 1)
    changes = [name for name in _STALE_CHANGES if name == "dataset size" or sampler_plug.supports(name)]
    changed = data.draw(st.sampled_from(changes), label=CHANGED_LABEL)
    other = _STALE_CHANGES[changed](case, data, sampler_plug)
    taken = data.draw(st.integers(1, length), label=CHECKPOINT_LABEL)
    reply = foreign_state_refusal(SIMULATED, sampler_plug, contract, case, other, epoch, taken)
    _judge_refusal(
        "stale_state_refused",
        reply,
        case,
        f"a state saved by rank 0 after {items(reply.taken)} of epoch {epoch} was loaded by a sampler built with "
        f"another {changed} ({other.describe()}), under which rank 0's pass of the epoch differs,",
        "a stale state must raise at load_state_dict or at the first item, else the job silently resumes at "
        "the wrong items",
    )


@pytest.mark.invariant("other_world_size_refused")
@given(data=st.data())
def test_state_from_another_world_size_refused(sampler_plug, contract, drop_last, data):
    """A sampler that does not promise ``elastic``, handed a state saved under another world
    size, raises at load_state_dict or at the first item."""
    case, epoch = drawn(data, sampler_plug, contract, drop_last)
    length = pass_items(contract, case)
    judge_only_if(length >= 1)
    new_world = other_world_size(data, case.world_size, OTHER_WORLD_LABEL)
    taken = data.draw(st.integers(1, length), label=CHECKPOINT_LABEL)
    other = case.with_(world_size=new_world)
    reply = foreign_state_refusal(SIMULATED, sampler_plug, contract, case, other, epoch, taken)
    _judge_refusal(
        "other_world_size_refused",
        reply,
        case,
        f"a state saved by rank 0 of {case.world_size} after {items(reply.taken)} of epoch {epoch} was loaded by "
        f"rank 0 of {new_world}, whose pass of the epoch differs,",
        "a sampler that is not elastic must refuse a state from another world size, or its ranks resume "
        "shards of a topology that no longer exists",
    )


def _judge_refusal(flag, reply, case, what_happened, why_it_must_raise):
    """Fail ``flag`` unless the sampler refused the foreign state it was handed. Not judged
    where the state is valid there after all: saved before any item (rank 0's pass was
    empty), or where rank 0's pass of the epoch is the same under the other arguments
    (shuffle or seed at N = 1, drop_last when W divides N), so resuming skips the very items
    the state counted."""
    if reply.missing:
        fail(flag, missing_protocol(flag, reply.missing).message, case)
    judge_only_if(reply.taken >= 1 and reply.pass_differs)
    if reply.refusal is None:
        fail(flag, f"{what_happened} and it went on without an error; {why_it_must_raise}", case)
