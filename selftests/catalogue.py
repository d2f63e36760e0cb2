"""Which property proves itself against which known-bad sampler: the one place to look.

``KNOWN_BAD`` maps a ``--sampler`` spec to the property test that must reject it and
that property's flag (its bracketed title, ``harness.contracts.INVARIANTS[flag]``,
starts the failure text). ``python -m selftests.catalogue`` prints the README's table.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from harness.contracts import INVARIANTS, GUARDS
from harness.runner import FAULT

from .corpus import known_bad

KNOWN_BAD_MODULE = "selftests.corpus.known_bad"
# A sampler that raises is titled as a fault, whichever property was checking.
FAULT_TITLE = f"[{FAULT}]"


@dataclass(frozen=True)
class Rejection:
    test: str  # the test function in properties/ that must fail
    flag: str  # the invariant it checks
    crashes: bool = False  # the sampler raises: the failure is titled as a fault, not by the invariant

    @property
    def title(self) -> str:
        return FAULT_TITLE if self.crashes else f"[{INVARIANTS[self.flag]}]"


def _spec(name: str) -> str:
    return f"{KNOWN_BAD_MODULE}:{name}"


KNOWN_BAD: dict[str, Rejection] = {
    _spec("LenIgnoresDropLast"): Rejection("test_len_matches_iteration", "len_matches_iter"),
    _spec("FloorNotCeil"): Rejection("test_equal_rank_lengths", "equal_length"),
    _spec("UnevenContiguousSplit"): Rejection("test_equal_rank_lengths", "equal_length"),
    _spec("YieldsTensors"): Rejection("test_indices_are_valid", "valid_indices"),
    _spec("YieldsFloats"): Rejection("test_indices_are_valid", "valid_indices"),
    _spec("PadsPastTheEnd"): Rejection("test_indices_are_valid", "valid_indices"),
    _spec("NeverStops"): Rejection("test_indices_are_valid", "valid_indices"),
    _spec("RankInSeed"): Rejection("test_union_coverage", "covers"),
    _spec("DropLastIgnored"): Rejection("test_ranks_disjoint_unless_padded", "disjoint"),
    _spec("PadsFromTail"): Rejection("test_padding_from_head", "pads_from_head"),
    _spec("RandomPadding"): Rejection("test_padding_from_head", "pads_from_head"),
    _spec("SingleHeadCopy"): Rejection("test_padding_from_head", "pads_from_head"),
    _spec("ContiguousBlocks"): Rejection("test_strided_assignment", "strided"),
    _spec("ShuffleIgnored"): Rejection("test_no_shuffle_keeps_dataset_order", "unshuffled_in_order"),
    _spec("GlobalRNG"): Rejection("test_same_order_without_set_epoch", "deterministic"),
    _spec("ReshufflesEveryIter"): Rejection("test_same_order_without_set_epoch", "deterministic"),
    _spec("EpochIgnored"): Rejection("test_set_epoch_reshuffles", "reshuffles_on_set_epoch"),
    _spec("WrapperDropsSetEpoch"): Rejection("test_set_epoch_reshuffles", "reshuffles_on_set_epoch"),
    _spec("WrapperWithoutSetEpoch"): Rejection("test_set_epoch_reshuffles", "reshuffles_on_set_epoch"),
    _spec("SeedIgnored"): Rejection("test_seed_changes_order", "seed_effective"),
    _spec("NoRankValidation"): Rejection("test_invalid_arguments_refused", "validates_arguments"),
    _spec("CrashesOnEmptyDataset"): Rejection("test_edge_sizes", "edge_sizes", crashes=True),
    _spec("UnpaddedStrided"): Rejection("test_equal_batch_counts", "equal_batches"),
}

# Samplers that must be certified under the default contract.
GOOD = (
    "torch.utils.data.distributed:DistributedSampler",
    "selftests.corpus.reference:NumpyDistributedSampler",
    "selftests.corpus.parts:PartsSampler",  # the base every known-bad sampler deviates from
)


def sampler_of(spec: str) -> type:
    return getattr(known_bad, spec.rpartition(":")[2])


def bug_class(spec: str) -> str:
    """The first paragraph of the known-bad sampler's docstring, on one line."""
    return " ".join(inspect.getdoc(sampler_of(spec)).split("\n\n")[0].split())


def property_table() -> str:
    """Markdown rows: property, what it guards, the known-bad samplers that prove it."""
    rows = ["| property | test | guards against | known-bad sampler: bug |", "| --- | --- | --- | --- |"]
    by_flag: dict[str, list[str]] = {}
    for spec, rejection in KNOWN_BAD.items():
        by_flag.setdefault(rejection.flag, []).append(spec)
    tests = {rejection.flag: rejection.test for rejection in KNOWN_BAD.values()}
    for flag, specs in by_flag.items():
        proofs = "<br>".join(f"`{spec.rpartition(':')[2]}`: {bug_class(spec)}" for spec in specs)
        rows.append(f"| {INVARIANTS[flag]} | `{tests[flag]}` | {GUARDS.get(flag, '')} | {proofs} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(property_table())
