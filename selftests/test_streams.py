"""The streaming-dataset subject end to end: ``--contract=stream`` certifies the reference
dataset through the whole suite, and rejects each bug of the corpus
(``selftests/corpus/streams_bad.py``) through exactly the invariants the catalogue says."""

from __future__ import annotations

import inspect
import multiprocessing
import re

import pytest
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from sampler_conformance.adapters import (
    SamplerPackageMissing,
    accelerate,
    hf_datasets,
    litdata_chunks,
    mosaic_streaming,
    transformers,
    webdataset_tar,
)
from sampler_conformance.core.subject import SpecError
from sampler_conformance.execution.scenario import CallWatch, RankContext
from sampler_conformance.subjects import GROUP_ONLY, REGISTRY, contract_named
from sampler_conformance.subjects.iterable_dataset import SUBJECT
from sampler_conformance.subjects.iterable_dataset.case import StreamCase
from sampler_conformance.subjects.iterable_dataset.loading import loader_generator, simulated_epoch
from sampler_conformance.subjects.iterable_dataset.plug import check_fit, load_plug

from .catalogue import (
    STREAM_CONTRACT,
    STREAM_RESUMABLE_CONTRACT,
    STREAM_WORLD_SIZES,
    STREAMS_BAD,
    STREAMS_BAD_MODULE,
    STREAMS_GROUP_BAD,
    STREAMS_OTHER_CONTRACTS_BAD,
    STREAMS_RESUME_BAD,
    title_of,
)
from .reproduced import assert_reproduced
from .suite_run import REPO, certify, certify_rejected
from .test_adapters import hide_packages

CONTRACT_OPTION = f"--contract={STREAM_CONTRACT}"


# The first three references share their state (torch_iterable.RankWorkerSplit): one of them is resumed.
@pytest.mark.parametrize("contract", ["stream+resumable", "stream_padded", "stream_truncated", "stream_mix"])
def test_each_contracts_reference_holds_every_invariant_in_the_whole_suite(pytester, contract):
    """Certified with no spec: the contract's reference is what runs."""
    reference = contract_named(contract).reference or SUBJECT.default_spec
    run = certify(pytester, "", f"--contract={contract}", f"--world-sizes={STREAM_WORLD_SIZES}", ranks="all")
    assert run.exit_code == pytest.ExitCode.OK, run.explain()
    held = {flag for flag, status in run.statuses.items() if status == "held"}
    assert held == contract_named(contract).flags, run.explain()
    assert run.verdict.startswith(f"VERDICT: {reference} conforms"), run.verdict


@pytest.mark.parametrize("spec", list(STREAMS_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_stream_bug_fails_exactly_its_invariants(pytester, spec):
    run = certify_rejected(pytester, spec, STREAMS_BAD[spec], CONTRACT_OPTION, "--repro=on")
    unchecked = [f for f in REGISTRY if f in GROUP_ONLY and contract_named(STREAM_CONTRACT).promises(f)]
    assert "not run: " + ", ".join(unchecked) in run.verdict, run.verdict
    assert_reproduced(run, SUBJECT.default_spec, flaky=FLAKY.get(spec, ()))


@pytest.mark.parametrize("spec", list(STREAMS_OTHER_CONTRACTS_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_bug_under_its_own_contract_fails_exactly_its_invariants(pytester, spec):
    rejection = STREAMS_OTHER_CONTRACTS_BAD[spec]
    run = certify_rejected(pytester, spec, rejection, f"--contract={rejection.under}", "--repro=on")
    reference = contract_named(rejection.under).reference or SUBJECT.default_spec
    assert_reproduced(run, reference, flaky=FLAKY.get(spec, ()))


# The stream known-bads whose scripts no two runs print alike, by the flags they fail so: the run says why.
FLAKY = {f"{STREAMS_BAD_MODULE}:UnseededShuffle": ("exactly_once", "stream_deterministic")}


@pytest.mark.parametrize("spec", list(STREAMS_GROUP_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_stream_bug_of_process_groups_fails_exactly_its_invariants_in_the_whole_suite(pytester, spec):
    run = certify_rejected(
        pytester,
        spec,
        STREAMS_GROUP_BAD[spec],
        CONTRACT_OPTION,
        f"--world-sizes={STREAM_WORLD_SIZES}",
        "--repro=on",
        ranks="all",
    )
    # stream_agrees' scripts read every rank's process in a fresh interpreter of its own hash seed.
    assert_reproduced(run, SUBJECT.default_spec, flaky=FLAKY.get(spec, ()), read_in_groups={"stream_agrees"})


@pytest.mark.parametrize("spec", list(STREAMS_RESUME_BAD), ids=lambda spec: spec.rpartition(":")[2])
def test_resume_bug_fails_exactly_its_invariants_in_the_whole_suite(pytester, spec):
    contract = f"--contract={STREAM_RESUMABLE_CONTRACT}"
    options = (contract, f"--world-sizes={STREAM_WORLD_SIZES}", "--repro=on")
    run = certify_rejected(pytester, spec, STREAMS_RESUME_BAD[spec], *options, ranks="all")
    reference = contract_named(STREAM_RESUMABLE_CONTRACT).reference or SUBJECT.default_spec
    assert_reproduced(run, reference)


def test_a_fault_raised_only_when_resumed_is_reproduced_through_the_resume(pytester):
    """A dataset that raises in load_state_dict fails stream_runs in the resume tests alone:
    its script reads the runs those tests read, through StatefulDataLoader (one epoch through a
    plain DataLoader holds), and exits 1 on the IndexError; against the reference, 0."""
    options = (f"--contract={STREAM_RESUMABLE_CONTRACT}", f"--world-sizes={STREAM_WORLD_SIZES}", "--repro=on")
    run = certify(
        pytester, "selftests.corpus.faulty:RaisesOnResume", *options, "-k", "resume_continues[", ranks="groups"
    )
    assert run.failed_invariants == {"stream_runs"}, run.explain()
    (stream_runs,) = (i for i in run.written["invariants"] if i["flag"] == "stream_runs")
    assert "StatefulDataLoader(" in stream_runs["reproduction"]["output"], stream_runs["reproduction"]
    assert "here: rank 0: IndexError: list index out of range" in stream_runs["reproduction"]["output"]
    assert_reproduced(run, SUBJECT.default_spec)


def test_invariants_judged_only_on_empty_epochs_are_not_held(pytester):
    """Every item of StringIds has a string id ("17"): each case with an item is set aside
    under item_ids, and only empty epochs run to the end, where nothing can fail. They judge
    nothing, in-process or in groups: the invariants are "not judged" on 0 cases, never held,
    and the set-aside words say what the dataset did, with no crash it never had."""
    spec = f"{STREAMS_BAD_MODULE}:StringIds"
    options = (CONTRACT_OPTION, f"--world-sizes={STREAM_WORLD_SIZES}", "-k", "exactly_once or no_foreign_items")
    run = certify(pytester, spec, *options, ranks="all")
    judged = {i["flag"]: (i["status"], i["judged"]) for i in run.written["invariants"]}
    assert judged["exactly_once"] == judged["no_foreign_items"] == ("not judged", 0), run.explain()
    assert "examples set aside because the dataset yielded items without a valid id (see item_ids)" in run.summary
    assert "read no item, so could not fail it" in run.summary, run.summary
    assert "crashed" not in run.summary and "(see stream_runs)" not in run.summary, run.summary


def test_a_dataset_without_state_dict_fails_every_resume_invariant_saying_why(pytester):
    """The docs' example has no Stateful protocol: StatefulDataLoader would fast-forward it."""
    spec = "sampler_conformance.adapters.torch_iterable:docs_example"
    run = certify(
        pytester,
        spec,
        f"--contract={STREAM_RESUMABLE_CONTRACT}",
        "--world-sizes=2",
        "-k",
        "resume or plain",
        ranks="groups",
    )
    resume_flags = contract_named(STREAM_RESUMABLE_CONTRACT).flags - contract_named(STREAM_CONTRACT).flags
    # and stream_runs: the example asserts end > start, so an empty dataset crashes it
    assert run.failed_invariants == resume_flags | {"stream_runs"}, run.explain()
    for flag in resume_flags:
        assert "the dataset has no state_dict() and no load_state_dict()" in run.counterexamples(flag)[0]["message"]


def test_a_dataset_given_as_a_file_reaches_real_loader_workers(pytester):
    """Workers unpickle the rank's dataset: its module, loaded from a file, must be in theirs."""
    spec = f"{REPO / 'adapters' / 'torch_iterable.py'}:make"
    run = certify(pytester, spec, CONTRACT_OPTION, "--world-sizes=2", "-k", "exactly_once", ranks="groups")
    assert run.statuses["exactly_once"] == "held", run.explain()


GENERATOR_HOLDING_STREAM = """
import torch

from sampler_conformance.adapters.torch_iterable import RankWorkerSplit


class HoldsGenerator(RankWorkerSplit):
    # What accelerate's and transformers' IterableDatasetShard ask the dataset they shard to hold.
    def __init__(self, *arguments):
        super().__init__(*arguments)
        self.generator = torch.Generator().manual_seed(1234)
        torch.rand(3, generator=self.generator)  # advanced: its state, not its seed, must travel

    def __iter__(self):
        expected = torch.Generator().manual_seed(1234)
        torch.rand(3, generator=expected)
        if not torch.equal(self.generator.get_state(), expected.get_state()):
            raise RuntimeError("this copy's generator is not the dataset's")
        return super().__iter__()


def make(dataset_size, *, rank, world_size, seed, shuffle):
    return HoldsGenerator(dataset_size, rank, world_size, seed, shuffle)
"""


def test_a_dataset_holding_a_generator_reaches_real_loader_workers_as_under_fork(pytester):
    """torch's DataLoader cannot send a torch.Generator to a forkserver or spawn worker (the
    worker dies unpickling it); fork copies it. The suite's workers get an exact copy too, and
    the dataset is judged, where the suite once reported its own error."""
    pytester.makepyfile(holds_generator=GENERATOR_HOLDING_STREAM)
    spec = f"{pytester.path / 'holds_generator.py'}:make"
    run = certify(pytester, spec, CONTRACT_OPTION, "--world-sizes=2", "-k", "exactly_once", ranks="groups")
    assert run.statuses["exactly_once"] == "held", run.explain()


GROUP_ONLY_STREAM = """
import torch.distributed as dist

from sampler_conformance.adapters.torch_iterable import make as reference


def make(dataset_size, *, rank, world_size, seed, shuffle):
    # Takes its rank from the process group, whatever it is told.
    return reference(dataset_size, rank=dist.get_rank(), world_size=dist.get_world_size(), seed=seed, shuffle=shuffle)


make.needs_process_group = True
"""


def test_a_dataset_that_takes_its_rank_from_the_group_is_judged_in_groups_saying_what_cannot_be(pytester):
    pytester.makepyfile(group_only=GROUP_ONLY_STREAM)
    spec = f"{pytester.path / 'group_only.py'}:make"
    run = certify(pytester, spec, CONTRACT_OPTION, "--world-sizes=2", "-k", "agrees or exactly_once", ranks="all")
    assert run.statuses["exactly_once"] == "held", run.explain()
    assert run.statuses["stream_agrees"] == "not applicable", run.explain()
    assert "a process cannot build another rank's dataset" in run.output, run.explain()


@pytest.mark.parametrize(
    ("factory", "module", "distribution"),
    [
        (hf_datasets.split_by_node, "datasets", "datasets"),
        (hf_datasets.arrow_files, "datasets", "datasets"),
        (hf_datasets.interleaved, "datasets", "datasets"),
        (webdataset_tar.split_by_node, "webdataset", "webdataset"),
        (webdataset_tar.random_mix, "webdataset", "webdataset"),
        (litdata_chunks.streaming_dataset, "litdata", "litdata"),
        (litdata_chunks.combined, "litdata", "litdata"),
        (mosaic_streaming.streaming_dataset, "streaming", "mosaicml-streaming"),
        (accelerate.IterableDatasetShard, "accelerate", "accelerate"),
        (transformers.IterableDatasetShard, "transformers", "transformers"),
    ],
)
def test_a_missing_library_is_named_with_what_to_install(monkeypatch, tmp_path, factory, module, distribution):
    hide_packages(monkeypatch, (module,))
    spec = f"{factory.__module__}:{factory.__name__}"
    with pytest.raises(SpecError) as refused:  # the spec, before any test
        load_plug(spec)
    case = StreamCase(dataset_size=4, world_size=1, shard_sizes=(2, 2), source_sizes=(2, 2), weights=(1.0, 1.0))
    options = case.factory_options(str(tmp_path))
    taken = inspect.signature(factory).parameters
    with pytest.raises(SamplerPackageMissing) as raised:  # the factory itself, called anyway
        factory(4, rank=0, world_size=1, **{name: value for name, value in options.items() if name in taken})
    for error in (refused.value, raised.value):
        assert f"pip install {distribution}" in str(error) and spec in str(error)


def test_a_factory_without_sources_and_weights_under_stream_mix_is_a_usage_error():
    """Before any test: under `stream_mix` a factory that takes no sources= or weights= is
    refused, naming them; the mix's reference fits, and so does any factory under `stream`."""
    check_fit(load_plug(SUBJECT.default_spec), contract_named(STREAM_CONTRACT))
    check_fit(load_plug("sampler_conformance.adapters.torch_iterable:make_mix"), contract_named("stream_mix"))
    with pytest.raises(SpecError, match="takes no sources= or weights=, which --contract=stream_mix builds"):
        check_fit(load_plug(SUBJECT.default_spec), contract_named("stream_mix"))


def test_a_dataset_that_raises_is_titled_a_dataset_fault_everywhere(pytester):
    """The same run as RefusesEmpty's rejection: a fault is charged to stream_runs, in the
    dataset's words, in the certificate, the summary and pytest's failure text."""
    spec = f"{STREAMS_BAD_MODULE}:RefusesEmpty"
    run = certify(pytester, spec, CONTRACT_OPTION)
    first = run.counterexamples("stream_runs")[0]
    assert first["title"] == "dataset fault" and first["message"].startswith("rank 0: the dataset raised"), first
    assert "[dataset fault] rank 0: the dataset raised AssertionError" in run.summary, run.summary
    assert "[sampler fault]" not in run.output, run.explain()
    assert "[dataset fault] rank 0: the dataset raised" in run.failure_text("test_stream_runs"), run.explain()
    assert title_of(STREAMS_BAD[spec]) == "[dataset fault]"


def test_a_stream_is_spoken_of_in_its_own_words(pytester):
    """A stream's ranks yield items, counted as items, with no word of a len() the suite never
    asks of a stream (NoWorkerSplit's rejection run); the header lists no parameter the
    contract does not pass: a factory without sources= and weights= lacks nothing under
    stream, which never mixes. Before: "rank 0 (3 indices, len() not asked)", "sampler
    parameters missing: ..., sources, weights"."""
    run = certify(pytester, f"{STREAMS_BAD_MODULE}:NoWorkerSplit", CONTRACT_OPTION)
    rank_lines = re.findall(r"^E?\s+rank \d+ \(.*", run.output, re.M)
    assert rank_lines and all(re.search(r"\(\d+ items?\):", line) for line in rank_lines), rank_lines
    pytester.makepyfile(
        plain_stream="def make(dataset_size, *, rank, world_size, seed=0):\n    return range(rank, dataset_size, world_size)\n"
    )
    collected = pytester.runpytest_subprocess(
        "-p", "sampler_conformance.plugin", "--sampler=plain_stream.py:make", CONTRACT_OPTION, "--co"
    )
    (header,) = [line for line in collected.outlines if line.startswith("sampler parameters missing: ")]
    assert "shuffle" in header and "sources" not in header and "weights" not in header, header


def test_an_order_that_repeats_only_through_workers_is_said_to_and_why(pytester):
    """GeneratorAdvancedInIter reshuffles without workers and repeats through them: read again
    without workers, the failure says so, in-process and through real DataLoader workers."""
    spec = f"{STREAMS_BAD_MODULE}:GeneratorAdvancedInIter"
    in_process = certify(pytester, spec, CONTRACT_OPTION).counterexamples("stream_reshuffles")
    in_groups = certify(
        pytester, spec, CONTRACT_OPTION, "--world-sizes=2", "-k", "reshuffles", ranks="groups"
    ).counterexamples("stream_reshuffles")
    for first in (in_process[0], in_groups[0]):
        message = first["message"]
        assert ", read by num_workers=" in message and ", read by num_workers=0" not in message, first
        assert message.endswith(
            "Read by num_workers=0, the same epochs changed order: the order moves on as the main process iterates "
            "the dataset (a generator made in __init__ and advanced in __iter__), and each fresh worker copies the "
            "dataset as it was built, never iterated, so through workers every epoch repeats the first"
        ), first


class _WorkerSeeds(IterableDataset):
    """Yields the seed its worker was given."""

    def __iter__(self):
        info = get_worker_info()
        assert info is not None, "read by workers only"
        yield info.seed


def test_simulated_workers_get_the_seeds_a_real_dataloader_gives_them():
    """Both draw each epoch's base seed from the loader's generator, seeded from the case: the same
    command reads the same way in every run, and the simulation as a real loader does."""
    case = StreamCase(dataset_size=2, world_size=1, shard_sizes=(2,), num_workers=2)
    rank = RankContext(0, 1, None, CallWatch.create(multiprocessing.get_context("fork")))
    generator = loader_generator(case, rank=0, reading=0)
    simulated = [
        [int(batch.ids[0]) for batch in simulated_epoch(rank, _WorkerSeeds(), case, generator).batches]
        for _ in range(2)
    ]
    loader = DataLoader(
        _WorkerSeeds(), batch_size=None, num_workers=2, generator=loader_generator(case, rank=0, reading=0)
    )
    assert simulated == [list(loader), list(loader)]
    assert simulated[0] != simulated[1]  # a new base seed each epoch
    other_run = [
        int(b.ids[0]) for b in simulated_epoch(rank, _WorkerSeeds(), case, loader_generator(case, 0, 1)).batches
    ]
    assert other_run != simulated[0]
