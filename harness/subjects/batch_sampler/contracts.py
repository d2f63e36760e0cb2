"""The batch sampler's contracts.

``dynamic_batches`` is what a token-budget (length-bucketed) batch sampler owes a training
loop under DDP: every rank yields the same number of batches per epoch; every batch is
non-empty and costs at most ``max_tokens`` under the sampler's declared cost (the sum of its
items' lengths, or its longest item times its size, ``plug.BATCH_COST``), except that an item
longer than the budget is yielded alone; each item is yielded at most once per epoch across
ranks, and the items left out would fit in W - 1 batches (the last, incomplete round of
batches may be dropped to keep the ranks equal, nothing more); every process plans the same
batches; the plan is a function of the seed and the epoch, and changes with the epoch;
``len()``, where the sampler has one, counts the batches it yields.

``micro_batches`` is ``dynamic_batches`` without a budget, for samplers that cut each global
step of ``batch_size`` items into the ranks' micro-batches of varying sizes (transformers'
``BatchRebalanceSampler``, Megatron's micro-batch samplers): every rank yields the same
number of non-empty batches per epoch; each item at most once per epoch across ranks, fewer
than ``batch_size`` left out (one incomplete last step may be dropped, nothing more); every
process plans the same batches; set by the seed and the epoch; ``len()``, where present,
counts the batches.

``poisson`` is what a Poisson-subsampling sampler for differentially private training
(opacus' ``DistributedUniformWithReplacementSampler``) owes: each rank yields exactly
``len()`` batches per epoch, the same number on every rank, empty ones included; the ranks
draw from disjoint shards; at each step each item of a rank's shard is drawn with
probability ``sample_rate`` (statistical, false alarm at most 1e-6 per certification); each
epoch draws anew. It does not promise reproducible draws: differential privacy wants them
secret (opacus' secure mode draws from a cryptographic generator), so determinism and
agreement across processes are ``dynamic_batches``' alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from sampler_conformance.core.contracts import Contract, Promise


@dataclass(frozen=True, repr=False)
class BatchContract(Contract):
    subject: ClassVar[str] = "batch_sampler"
    parameter: str = (
        "max_tokens"  # what the factory is given beside the lengths: the budget, the step's size, or the rate
    )
    empty_batches: bool = False  # an empty batch is a step of its own (Poisson), not a fault
    requires_len: bool = False  # len() is promised: a sampler without __len__ fails batch_len_matches


# The promises a batch sampler's contract is composed of.
BATCHES_RUN = Promise(
    "batches_run", "runs every valid case, yielding batches of valid indices; len(), where present, counts them"
)
EQUAL_BATCH_COUNTS = Promise("equal_batch_counts", "every rank the same number of batches per epoch")
BATCHES_RESHUFFLE = Promise("batches_reshuffle", "each epoch draws anew")
WITHIN_BUDGET = Promise(
    "within_budget",
    "each batch within max_tokens under the sampler's declared cost, an item over the budget alone",
    facts=(("parameter", "max_tokens"),),
)
EACH_ITEM_ONCE = Promise(
    "each_item_once",
    "each item at most once per epoch across ranks, those left out fitting in the last, dropped round",
    per_epoch=True,
)
REPRODUCIBLE_PLAN = Promise("reproducible_plan", "every process plans the same batches, set by the seed and the epoch")
POISSON_DRAWS = Promise(
    "poisson_draws",
    "the ranks draw from disjoint shards, each item of a shard at each step with probability sample_rate (statistical)",
    facts=(("parameter", "sample_rate"), ("empty_batches", True), ("requires_len", True)),
    per_epoch=True,
)
_SHARED = (BATCHES_RUN, EQUAL_BATCH_COUNTS, BATCHES_RESHUFFLE)

DYNAMIC_BATCHES = BatchContract.of(
    (*_SHARED, WITHIN_BUDGET, EACH_ITEM_ONCE, REPRODUCIBLE_PLAN),
    name="dynamic_batches",
    family="dynamic batch sampler",
    description=(
        "each rank yields the same number of non-empty batches per epoch, each within max_tokens under the "
        "sampler's declared cost (an item over the budget alone); each item at most once per epoch across ranks, "
        "those left out fitting in W - 1 batches; every process plans the same batches; set by seed and epoch; "
        "len(), where present, counts the batches"
    ),
    reference="sampler_conformance.adapters.budget_batches:make",
)

MICRO_BATCHES = BatchContract.of(
    (*_SHARED, EACH_ITEM_ONCE, REPRODUCIBLE_PLAN),
    name="micro_batches",
    family="micro-batch sampler",
    description=(
        "each global step of batch_size items cut into the ranks' non-empty micro-batches: each rank yields the same "
        "number of batches per epoch; each item at most once per epoch across ranks, fewer than batch_size left out; "
        "every process plans the same batches; set by seed and epoch; len(), where present, counts the batches"
    ),
    reference="sampler_conformance.adapters.budget_batches:micro_batches",
    parameter="batch_size",
)

POISSON = BatchContract.of(
    (*_SHARED, POISSON_DRAWS),
    name="poisson",
    family="Poisson sampler",
    description=(
        "each rank yields exactly len() batches per epoch, the same on every rank, empty ones included; the ranks "
        "draw from disjoint shards; each item of a shard drawn at each step with probability sample_rate "
        "(statistical, false alarm at most 1e-6 per certification); other draws every epoch"
    ),
    reference="sampler_conformance.adapters.budget_batches:poisson",
)

CONTRACTS: dict[str, BatchContract] = {c.name: c for c in (DYNAMIC_BATCHES, MICRO_BATCHES, POISSON)}
