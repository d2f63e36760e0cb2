"""What went wrong in a rank pool, as evidence: a rank's traceback, a death with its exit
and last stack, a hang with every rank's stack, each as the violation the failure carries;
and which failure that makes (:func:`what_failed`): the sampler's fault, hang or death, or
the suite's own error when no sampler code was on any stack."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any, Protocol

from sampler_conformance.core.case import Case
from sampler_conformance.core.evidence import (
    FAULT,
    HarnessError,
    SamplerDeath,
    SamplerFault,
    SamplerHang,
    Violation,
    failure_text,
)

from .blame import sampler_frames_in_dump, with_source_lines
from .messages import RankDied, RankError

INDENT = "    "


class FailingPool(Protocol):
    """What :func:`what_failed` asks of the pool that failed."""

    hosts: dict[int, str]  # rank -> host, where ranks run on several hosts
    timeout_s: float

    @property
    def simulated(self) -> bool: ...

    @property
    def where(self) -> str: ...  # "in a gloo group of 2 ranks", for messages

    def dump_stacks(self) -> dict[int, str]: ...

    def running_rank(self, rank: int) -> int: ...


@dataclass
class Collected:
    """What the ranks did with one request (or with starting)."""

    replies: dict[int, Any]
    errors: list[RankError]
    dead: list[RankDied]
    silent: list[int]  # alive, but no answer before the deadline
    stacks: dict[int, str] = field(default_factory=dict)  # of the silent ranks, when read where they ran

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.dead or self.silent)


def error_violation(error: RankError, named: str) -> Violation:
    return Violation(
        error.flag, f"{named}: {error.summary}", f"  traceback in {named}:\n{indented(error.traceback.rstrip())}"
    )


def death_violation(died: RankDied, in_sampler: bool, simulated: bool, host: str | None) -> Violation:
    where = " inside a call into the sampler" if in_sampler else ""
    last_frames = died.last_frames
    stack = f"  its last stack (faulthandler):\n{indented(with_source_lines(last_frames))}" if last_frames else ""
    on = f" on {host}" if host else ""
    who = (
        f"the sampler process (pid {died.pid}), running simulated rank {died.running},"
        if simulated
        else f"rank {died.rank} (pid {died.pid}{on})"
    )
    return Violation(FAULT, f"{who} died{where}: {describe_exit(died.exitcode)}", stack)


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "its pipe closed but the process has not exited"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by signal {name} (exit code {exitcode})"
    return f"exited with code {exitcode}"


def hang_violation(
    collected: Collected, stacks: dict[int, str], timeout_s: float, simulated: bool, running: int, hosts: dict[int, str]
) -> Violation:
    silent = collected.silent
    on = f" (on {', '.join(sorted({hosts[rank] for rank in silent if rank in hosts}))})" if hosts else ""
    if simulated:
        headline = (
            f"simulated rank {running} did not finish within {timeout_s:g} s (--rank-timeout) of its last call "
            f"into the sampler; it hangs"
        )
    else:
        answered = sorted(collected.replies)
        headline = (
            f"rank(s) {silent}{on} did not answer within {timeout_s:g} s (--rank-timeout) of their last call "
            f"into the sampler; they hang" + (f"; rank(s) {answered} answered" if answered else "")
        )

    def title(rank: int) -> str:
        if simulated:
            return "the sampler process"
        return f"rank {rank}" + (f" on {hosts[rank]}" if rank in hosts else "")

    dumps = "\n".join(
        f"  --- {title(rank)} ---\n" + indented(with_source_lines(text)) for rank, text in sorted(stacks.items())
    )
    if simulated:
        whose = "Its"
    elif set(stacks) == set(silent) and collected.replies:  # under torchrun each worker dumps its own silent child
        whose = "The silent ranks'"
    else:
        whose = "Every rank's"
    return Violation(FAULT, f"{headline}. {whose} stack (faulthandler) below.", dumps)


def indented(text: str) -> str:
    return "\n".join(INDENT + line for line in text.splitlines())


def what_failed(pool: FailingPool, case: Case | None, collected: Collected, doing: str) -> BaseException:
    """The exception for what went wrong on ``pool``: the sampler's fault when some rank's stack or
    traceback shows the sampler's code (or a rank died inside a call into it), else the
    suite's own error."""
    violations = [
        error_violation(error, named(error.rank, pool.hosts))
        for error in sorted(collected.errors, key=lambda e: e.rank)
    ]
    evidence = any(error.sampler_frames for error in collected.errors)
    for died in sorted(collected.dead, key=lambda d: d.rank):
        died_in_sampler = died.in_sampler or bool(sampler_frames_in_dump(died.last_frames))
        evidence = evidence or died_in_sampler
        violations.append(death_violation(died, died_in_sampler, pool.simulated, pool.hosts.get(died.rank)))
    epochs = {error.epoch for error in collected.errors} - {None}
    at = case.with_(epoch=epochs.pop()) if case is not None and len(epochs) == 1 else case
    context = f"\n  while {doing} {pool.where}"
    # A rank that raised or died is the fault, whatever its peers were doing: those still
    # silent wait for it (in a collective it never joins), a consequence and no hang.
    hung = bool(collected.silent) and not violations
    if collected.silent and violations:
        context += (
            f"\n  rank(s) {collected.silent} then waited for it, in a collective it never joined: a "
            f"consequence of the fault above, not a fault of their own; the group was restarted"
        )
    if hung:
        stacks = collected.stacks or pool.dump_stacks()
        evidence = any(sampler_frames_in_dump(text) for text in stacks.values())
        violations.append(
            hang_violation(
                collected,
                stacks,
                pool.timeout_s,
                pool.simulated,
                pool.running_rank(collected.silent[0]),
                pool.hosts,
            )
        )
    if not evidence or case is None:
        return HarnessError(
            "the suite failed, not the sampler: no sampler code was on any rank's stack or traceback\n"
            + failure_text(violations, at, None)
            + context,
            # A request a rank raised on raises again; a group that failed to start may not fail again.
            raised=case is not None and bool(collected.errors) and not collected.dead and not hung,
        )
    # A hang cost a --rank-timeout, a dead rank of a group a group restart: no shrinking
    # through more of them. The sampler process restarts in milliseconds: a death there
    # may, and so may a raise (its group restarts if peers were left waiting, but a raise
    # is set aside like any other, and never shrunk outside its own test).
    if hung:
        return SamplerHang(violations, at, context=context)
    if collected.dead and not pool.simulated:
        return SamplerDeath(violations, at, context=context)
    return SamplerFault(violations, at, context=context)


def named(rank: int, hosts: dict[int, str]) -> str:
    """``rank 2``, and where ranks run on several hosts, ``rank 2 on HOST``."""
    host = hosts.get(rank)
    return f"rank {rank}" + (f" on {host}" if host else "")
