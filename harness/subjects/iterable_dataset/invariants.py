"""The streaming dataset's invariants: one record each (``harness.core.invariants.Invariant``).

Each names the known-bad dataset of ``selftests/corpus/streams_bad.py`` that reproduces the
bug it guards against; ``selftests/test_streams.py`` certifies each and asserts its exact
set of failed invariants. Those judged on one epoch of every rank are declared on their
checks (``checks.ONE_EPOCH``), the others here.
"""

from __future__ import annotations

from sampler_conformance.core.invariants import Invariant, Where

from .checks import BAD, ONE_EPOCH, STREAM

_RESUMABLE = "stream+resumable"
_LOADER = ("torchdata",)  # torchdata's StatefulDataLoader resumes the stream

DECLARED: tuple[Invariant, ...] = (
    Invariant(
        "stream_runs",
        "the stream runs without crashing",
        "datasets that raise on empty or small layouts, in a worker, or when there are more workers than shards",
        f"{BAD}:RefusesEmpty",
        proven_under=STREAM,
        judged_from=0,  # an empty epoch can crash too
    ),
    *ONE_EPOCH.invariants,
    Invariant(
        "same_items_any_workers",
        "the same items whatever num_workers",
        "padding or dropping decided per worker, so that the items repeated or dropped, and what training and "
        "evaluation see, change with num_workers or persistent_workers",
        f"{BAD}:PadsPerWorker",
        proven_under="stream_padded",
    ),
    Invariant(
        "even_batches",
        "every rank runs the same number of batches",
        "a rank that runs out of batches first while the others wait in a collective: DDP hangs "
        "(pytorch/pytorch #141069, huggingface/datasets #6437)",
        f"{BAD}:ShardsPerRank",
        proven_under=STREAM,
    ),
    Invariant(
        "no_starved_worker",
        "no starved worker",
        "workers left without data while others hold several shards (huggingface/datasets #8669)",
        f"{BAD}:CollapsedShards",
        proven_under=STREAM,
    ),
    Invariant(
        "stream_deterministic",
        "the same stream for the same seed and epoch",
        "unseeded shuffles, orders that depend on the process (webdataset #233)",
        f"{BAD}:UnseededShuffle",
        proven_under=STREAM,
        where=Where.BOTH,  # in groups for a dataset only they can judge (needs_process_group)
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "stream_agrees",
        "rank processes agree",
        "orders that depend on per-process state (str hash seeds, unseeded generators), so that "
        "ranks split different orders and overlap",
        f"{BAD}:HashSeeded",
        proven_under=STREAM,
        where=Where.GROUPS,
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "stream_reshuffles",
        "a new order after set_epoch",
        "set_epoch ignored, so every epoch repeats the first one's order (webdataset #172)",
        f"{BAD}:EpochIgnored",
        proven_under=STREAM,
        needs=("shuffle",),
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "stream_seed_effective",
        "another seed, another order",
        "the seed never reaching the order, so that every run shuffles alike: accelerate's IterableDatasetShard "
        "reseeds its dataset's generator with the epoch alone (manual_seed(self.epoch))",
        f"{BAD}:SeedIgnored",
        proven_under=STREAM,
        where=Where.IN_PROCESS,
        needs=("seed", "shuffle"),
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "epoch_reaches_workers",
        "set_epoch reaches persistent workers",
        "an epoch kept in a plain attribute of the main process's copy, which persistent workers never "
        "see (huggingface/datasets #6673, fixed in #6710)",
        f"{BAD}:EpochInAttribute",
        proven_under=STREAM,
        where=Where.GROUPS,
        needs=("shuffle",),
        judged_from=2,  # an order: one item cannot show it
    ),
    Invariant(
        "stream_resume_continues",
        "a resume continues the epoch",
        "a loaded state the dataset ignores or restores only in part, so that the resumed run restarts its "
        "epoch, repeating what was trained on, or skips part of it (mosaicml/streaming #437: restarts from "
        "scratch despite load_state_dict)",
        f"{BAD}:IgnoresLoadedState",
        proven_under=_RESUMABLE,
        where=Where.GROUPS,
        packages=_LOADER,
    ),
    Invariant(
        "stream_resumes_compose",
        "a resumed run resumes again",
        "a resumed run whose checkpoints hold a stale, zero-initialized state, so that the second resume "
        "restarts the stream from its beginning (pytorch/torchtitan #3907, huggingface/datasets #8308)",
        f"{BAD}:StaleStateAfterResume",
        proven_under=_RESUMABLE,
        where=Where.GROUPS,
        packages=_LOADER,
    ),
    Invariant(
        "stream_epoch_after_resume",
        "the epoch after a resume is whole",
        "the offset of a resume applied to later epochs too, so that every epoch after it is cut short "
        "(huggingface/datasets #7447), or a state taken at an epoch's end that empties the next epoch "
        "(meta-pytorch/data #1437)",
        f"{BAD}:OffsetOutlivesEpoch",
        proven_under=_RESUMABLE,
        where=Where.GROUPS,
        packages=_LOADER,
    ),
    Invariant(
        "stream_plain_state",
        "the state is plain data",
        "a state that torch.load(weights_only=True) refuses (numpy scalars, generators, objects): a checkpoint "
        "that a trainer loading safely cannot load",
        f"{BAD}:NumpyPosition",
        proven_under=_RESUMABLE,
        where=Where.GROUPS,
        packages=_LOADER,
    ),
)
