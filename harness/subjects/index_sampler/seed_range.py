"""The seeds a sampler accepts, found once per process before the first test draws one.

Tests draw seeds below 2**63 and epochs below 2**31. Some samplers refuse part of that:
numpy's ``RandomState(seed + epoch)`` raises from seed + epoch = 2**32 on (MONAI's
``partition_dataset`` seeds one), torch's generator from 2**64 on. Drawing seeds such a
sampler refuses would set those examples aside, charge the refusal to ``edge_sizes`` as a
crash, and leave every invariant fewer cases judged. So a cheap probe (N=4, one pass, on one
simulated rank; through a group for a sampler that takes its rank from one) finds the smallest
seed refused without ``set_epoch`` and with the largest epoch the tests set. Every test then
draws seeds below both, and the refusal is reported once, as a finding.

A refusal is only a finding where the contract's reference shares it, or where the sampler
refuses those seeds when it is built, with its own error: a job then stops at its first line.
A sampler that takes a seed the reference accepts and raises later (numpy's ``RandomState``
at ``seed + epoch = 2**32``) crashes a job hours in, at the epoch that reaches it: that fails
``edge_sizes`` (:func:`late_refusal`). torch's ``DistributedSampler`` is the reference of
every index contract here, for seeds: it takes any seed below 2**64.

The probe assumes what every seeded sampler seen does: a seed is refused from some value on.
It runs the same way in every process (each pytest-xdist worker probes for itself), so each
finds the same range and the same words for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.evidence import SamplerFault, SamplerHang
from sampler_conformance.core.subject import Plug
from sampler_conformance.execution.scenario import Ranks, probing

from .case import IndexCase
from .contracts import TORCH, SamplerContract
from .plug import SamplerPlug, load_plug
from .scenarios.epochs import read_epochs
from .scenarios.steps import CONSTRUCTOR, Build

SEED_LIMIT = 2**63  # seeds drawn from [0, 2**63)
EPOCH_LIMIT = 2**31  # epochs drawn from [0, 2**31)
# The largest epoch a test sets: a resume test reads up to two epochs after the one it drew.
TOP_EPOCH = EPOCH_LIMIT - 1 + 2
# Beyond the drawn range: probed only to report what the sampler does there.
PROBE_CEILING = 2**64
PROBE_SIZE = 4  # items per rank of the probe's case: enough that a shuffle draws from the generator
# Where seeds are refused, if anywhere, as far as samplers seen go: past the signed and unsigned
# 32- and 64-bit integers their generators take (numpy's RandomState from 2**32 on, torch's
# generator from 2**64), with or without the top epoch added. Each is probed first, in order,
# so that a range is found in a dozen reads rather than a bisection's 64 on each side.
LIKELY_EDGES = sorted(
    seed
    for seed in {edge - shift for edge in (2**31, 2**32, 2**63, PROBE_CEILING) for shift in (0, TOP_EPOCH)}
    if 0 < seed < PROBE_CEILING
)


@dataclass(frozen=True)
class SeedRange:
    limit: int = SEED_LIMIT  # tests draw seeds from [0, limit)
    finding: str | None = None  # the refusal, for the run's summary
    # The refusal that sets the limit, when it came after the sampler was built: the seed, the
    # epoch set (None: no set_epoch) and the sampler's error.
    refused_late: tuple[int, int | None, str] | None = None


# Per sampler spec, its range, once probed in this process.
_PROBED: dict[str, SeedRange] = {}


def seed_limit(plug: SamplerPlug) -> int:
    """Where this process draws seeds for ``plug`` from: below its probed limit, else 2**63."""
    return seed_range(plug).limit


def probe_once(ranks: Ranks, plug: Plug, contract: Contract, world_size: int = 1) -> str | None:
    """Probe ``plug``'s seed range on ``ranks`` (a group of ``world_size``, or the simulated
    ranks) unless this process did already; the refusal to report, the first time only."""
    assert isinstance(plug, SamplerPlug) and isinstance(contract, SamplerContract), f"not an index sampler: {plug!r}"
    if plug.spec in _PROBED or not plug.supports("seed"):
        return None
    found = probe(ranks, plug, contract, world_size)
    _PROBED[plug.spec] = found
    return found.finding


def probe(ranks: Ranks, plug: SamplerPlug, contract: SamplerContract, world_size: int = 1) -> SeedRange:
    case = IndexCase(PROBE_SIZE * world_size, world_size, shuffle=True).within(contract)
    builds = (Build.GROUP,) if plug.needs_process_group else (Build.EXPLICIT,)

    def refusal(seed: int, epoch: int | None) -> str | None:
        """How the sampler refused ``seed`` (its error, without "rank r: "), or None."""
        try:
            with probing():
                read_epochs(ranks, plug, contract, case.with_(seed=seed), (epoch,), builds)
        except SamplerFault as fault:
            return fault.violations[0].message.splitlines()[0].split(": ", 1)[-1]
        return None

    try:
        without_epoch = smallest_refused(lambda seed: refusal(seed, None))
        at_top_epoch = smallest_refused(lambda seed: refusal(seed, TOP_EPOCH))
    except SamplerHang:  # a sampler that hangs on its seeds: the tests will meet it, at a cost of their own
        return SeedRange()
    limit = min([SEED_LIMIT, *(seed for seed, _ in (without_epoch, at_top_epoch) if seed is not None)])
    # The refusal that sets the limit (the one without an epoch, where both refuse the same seed).
    refusals = [
        (seed, epoch, how)
        for (seed, how), epoch in ((without_epoch, None), (at_top_epoch, TOP_EPOCH))
        if seed is not None
    ]
    first = min(refusals, key=lambda refused: refused[0], default=None)
    late = first if first is not None and CONSTRUCTOR not in first[2] else None
    return SeedRange(limit, describe(without_epoch, at_top_epoch, limit), late)


def late_refusal(own: SeedRange, reference: SeedRange, reference_spec: str) -> str | None:
    """What to charge ``edge_sizes`` with, if the sampler refuses, after it was built, seeds
    that the contract's reference accepts; None if it accepts them or refuses them up front."""
    if own.limit >= reference.limit or own.refused_late is None:
        return None
    seed, epoch, how = own.refused_late
    when = "before any set_epoch" if epoch is None else f"after set_epoch({power_form(epoch)})"
    return (
        f"seed={power_form(seed)} is accepted when the sampler is built, then refused {when}: {how}. The "
        f"contract's reference ({reference_spec}) takes every seed below {power_form(reference.limit)} with every "
        f"epoch the tests set, so a job seeded near {power_form(seed)} crashes at the epoch that reaches it, hours "
        f"in. Refuse such seeds in the constructor with a clear error, or accept them (reduce seed + epoch "
        f"to the range the generator takes)"
    )


_REFERENCE: dict[str, SeedRange] = {}


def reference_seed_range(ranks: Ranks, reference_spec: str) -> SeedRange:
    """The seed range of the reference sampler (probed once per process, under ``torch``)."""
    if reference_spec not in _REFERENCE:
        _REFERENCE[reference_spec] = probe(ranks, load_plug(reference_spec), TORCH)
    return _REFERENCE[reference_spec]


def seed_range(plug: SamplerPlug) -> SeedRange:
    """``plug``'s seed range as this process probed it (the whole range if it was not probed)."""
    return _PROBED.get(plug.spec, SeedRange())


Refused = tuple[int | None, str]  # the smallest seed refused (None: none up to 2**64), and how


def smallest_refused(refusal: Callable[[int], str | None]) -> Refused:
    """The smallest seed refused in [0, 2**64], if seed 0 is accepted and 2**64 is not: the
    likely edges first (:data:`LIKELY_EDGES`), each tried where it would be the first seed
    refused; then a bisection of what is left, where none was."""
    at_ceiling = refusal(PROBE_CEILING)
    if at_ceiling is None or refusal(0) is not None:  # all accepted, or all refused: a crash, no range
        return None, ""
    accepted, refused, how = 0, PROBE_CEILING, at_ceiling
    for edge in LIKELY_EDGES:
        why = refusal(edge)
        if why is None:
            accepted = edge
            continue
        refused, how = edge, why
        break
    if refused - accepted > 1 and refusal(refused - 1) is None:  # the edge found, in one more probe
        accepted = refused - 1
    while refused - accepted > 1:
        middle = (accepted + refused) // 2
        why = refusal(middle)
        if why is None:
            accepted = middle
        else:
            refused, how = middle, why
    return refused, how


def describe(without_epoch: Refused, at_top_epoch: Refused, limit: int) -> str | None:
    """The finding: where seeds are refused, the sampler's error, and what the tests draw."""
    seed, how = without_epoch
    top_seed, top_how = at_top_epoch
    if seed is None and top_seed is None:
        return None
    if seed is not None and top_seed == seed - TOP_EPOCH:
        text = f"seed + epoch >= {power_form(seed)} is refused: seed={power_form(seed)} fails with {how}"
    elif seed is not None:
        text = f"seeds of {power_form(seed)} and more are refused: seed={power_form(seed)} fails with {how}"
    else:
        text = (
            f"after set_epoch({power_form(TOP_EPOCH)}), seeds of {power_form(top_seed)} and more are refused: "
            f"seed={power_form(top_seed)} fails with {top_how}"
        )
    if limit < SEED_LIMIT:
        text += (
            f"; every test draws its seeds below {power_form(limit)} ({limit}), which the sampler accepts with "
            f"every epoch the tests set (up to {power_form(TOP_EPOCH)})"
        )
    return text


def power_form(value: int | None) -> str:
    """2**64, 2**31 + 1, 2**32 - 2: a large seed as people read it; others as they are."""
    if value is None or value < 2**16:
        return str(value)
    power = min((value.bit_length() - 1, value.bit_length()), key=lambda p: abs(value - 2**p))
    offset = value - 2**power
    if abs(offset) > 2**10:
        return str(value)
    return f"2**{power}" + (f" + {offset}" if offset > 0 else f" - {-offset}" if offset < 0 else "")
