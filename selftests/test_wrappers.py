"""--shard-with: a sampler with no rank of its own, certified as what a library's wrapper
makes of it on each rank (harness/subjects/index_sampler/wrappers.py)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from sampler_conformance.core.subject import SpecError
from sampler_conformance.subjects.index_sampler.plug import load_plug
from sampler_conformance.subjects.index_sampler.wrappers import ACCELERATE, WRAPPERS

from .suite_run import certify

SEEDED = "selftests.corpus.unsharded:SeededBatches"
SHORT_MID_EPOCH = "selftests.corpus.unsharded:ShortBatchMidEpoch"


SEEDED_ORDER = "selftests.corpus.unsharded:SeededOrder"
GLOBAL_RNG_ORDER = "selftests.corpus.unsharded:GlobalRNGOrder"


@pytest.mark.parametrize(
    ("wrapper", "inner", "contract", "failed"),
    [
        # accelerate 1.15's BatchSamplerShard accepts process_index >= num_processes.
        pytest.param("accelerate", SEEDED, "batch", {"validates_arguments"}, id="accelerate-full-batches"),
        # A short batch before the last: BatchSamplerShard yields a round only when its last
        # batch is full, so a round ending with it is lost (covers, whole_batches), len() counts
        # it (len_matches_iter), and one rank can get fewer batches than the others: a DDP hang.
        pytest.param(
            "accelerate",
            SHORT_MID_EPOCH,
            "batch",
            {"validates_arguments", "covers", "whole_batches", "len_matches_iter", "equal_batches"},
            id="accelerate-short-batch-mid-epoch",
        ),
        # Lightning 2.6's DistributedSamplerWrapper around a seeded sampler: torch's contract, in-process.
        pytest.param("lightning", SEEDED_ORDER, "torch", set(), id="lightning-seeded"),
        # Around a sampler that shuffles from the global generator, each rank deals positions of
        # its own permutation: items overlap and go missing.
        pytest.param(
            "lightning",
            GLOBAL_RNG_ORDER,
            "torch",
            {"covers", "disjoint", "pads_from_head", "strided", "deterministic"},
            id="lightning-global-rng",
        ),
    ],
)
def test_a_sampler_sharded_by_a_library_is_judged_as_what_each_rank_reads(pytester, wrapper, inner, contract, failed):
    library = WRAPPERS[wrapper].module.partition(".")[0]
    if importlib.util.find_spec(library) is None:  # not imported here: the certification imports it
        pytest.skip(f"--shard-with={wrapper} needs {library}, which is not installed here")
    run = certify(pytester, inner, f"--shard-with={wrapper}", f"--contract={contract}")
    assert run.exit_code == (1 if failed else 0) and run.failed_invariants == failed, run.explain()
    assert f" {inner} sharded with {wrapper} " in run.verdict, run.verdict
    assert run.written["sampler"]["spec"] == f"{inner} sharded with {wrapper}", run.written["sampler"]
    if "equal_batches" in failed:  # the hang, in the certificate's words
        (first, *_) = run.counterexamples("equal_batches")
        assert first["message"].startswith("ranks get different numbers of batches ["), first


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        (
            ("--shard-with=deepspeed",),
            "--shard-with='deepspeed' is not a known wrapper; choose one of: accelerate, lightning",
        ),
        (
            ("--shard-with=accelerate", "--contract=stream"),
            "--shard-with=accelerate: contract 'stream' is of iterable_dataset, whose things it does not wrap",
        ),
    ],
)
def test_shard_with_where_it_does_not_apply_is_a_usage_error(pytester, options, refusal):
    run = certify(pytester, SEEDED, *options)
    assert run.exit_code == 4 and refusal in run.output, run.explain()


def test_a_sampler_with_no_rank_is_pointed_to_shard_with():
    with pytest.raises(
        SpecError, match="if a library's wrapper shards it, name the wrapper: --shard-with=accelerate or"
    ):
        load_plug(SEEDED)


def test_a_wrapper_whose_library_is_missing_says_what_to_install(monkeypatch):
    for module in ("accelerate", ACCELERATE):  # importing either now raises ImportError, imported before or not
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(SpecError, match="needs the package 'accelerate', which is not installed: pip install"):
        load_plug(f"{SEEDED} sharded with accelerate")
