"""``torchrun [...] --nproc-per-node=K -m sampler_conformance.torchrun SPEC [pytest options]``.

Certifies SPEC in process groups made of the ranks torchrun started, on one node or many.

Design. Rank 0 runs the certification itself: the same pytest plugin over the same test
folders as ``python -m pytest --sampler=SPEC --world-sizes=W`` (W = torchrun's world
size), so the summary, the verdict, the certificate and the exit code come from the same
code. The in-process properties run on rank 0 alone; the real-group tests get their
groups from the torchrun ranks (``harness.execution.torchrun.pool``) instead of local processes.

No torchrun worker runs sampler code: a sampler that kills its process would make
torchrun tear the job down before rank 0 could report it. Each worker instead supervises
one child per group (``harness.execution.torchrun.agent``, rank 0's in a thread), spawned like a
local rank pool's ranks and joining the group through torchrun's c10d store under a
prefix fresh for each (re)start: no port of ours, no fixed port, and the host torchrun's
rendezvous chose. Scenarios and outcomes travel through the same store
(``harness.execution.torchrun.link``), polled with bounds. So a raise, a death or a hang is reported
as in a local run, naming the rank and its host, and the group restarts.

A group of W ranks is torchrun's ranks 0..W-1: the certification's groups are of
torchrun's world size, and the seed experiment's 2-rank pair is ranks 0 and 1.

NCCL is used when every rank has its GPU (cuda:LOCAL_RANK), gloo otherwise (``--backend``
as in pytest, default auto). At the end rank 0 sends pytest's exit code to every worker,
and each exits with it (also if torchrun's teardown reaches it first with SIGTERM: once
one worker exits non-zero, torchrun terminates the others).

Under NCCL each rank's tensors live on ``cuda:LOCAL_RANK`` (``backend.rank_device``), its
GPU on its own node.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from .execution.torchrun.pool import TorchrunPools

EXIT_USAGE = 4  # pytest's usage error
BEAT_EVERY_S = 1.0  # rank 0's beat, as the workers' (execution.torchrun.agent)
FINISH_WAIT_S = 60.0  # rank 0 waits this long for every worker to take the exit code
HELLO_WAIT_S = 120.0  # for every worker's hello (they import torch on busy cores)
ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
NAME = "sampler_conformance.torchrun"
USAGE = f"""\
usage: torchrun [--standalone | --nnodes=N --rdzv-backend=c10d --rdzv-endpoint=HOST:PORT ...] --nproc-per-node=K \\
           -m {NAME} [SPEC] [--contract NAME] [--certificate PATH] [--rank-timeout S] [any pytest option]

Certifies SPEC (MODULE:ATTR or path/to/file.py:ATTR; default torch's DistributedSampler)
in process groups of the ranks torchrun started; rank 0 prints the verdict and writes the
certificate, and every rank exits with pytest's exit code (0 conforms, 1 does not conform,
4 usage error, 5 nothing was proven). The world size is torchrun's: no --world-sizes.
"""


def main(argv: list[str] | None = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    rank = int(os.environ.get("RANK", "0") or 0)
    if args and args[0] in ("-h", "--help"):
        _exit(0, line=USAGE.rstrip() if rank == 0 else "")
    missing = [name for name in ENV if not os.environ.get(name)]
    if missing:
        _exit(
            EXIT_USAGE,
            line=f"{NAME}: not started by torchrun ({', '.join(missing)} unset); run it as "
            f"torchrun --nproc-per-node=K -m {NAME} SPEC",
        )
    if any(arg == "--world-sizes" or arg.startswith("--world-sizes=") for arg in args):
        _exit(
            EXIT_USAGE,
            line=f"{NAME}: --world-sizes is torchrun's world size here (--nnodes x --nproc-per-node); leave it out"
            if rank == 0
            else "",
        )
    spec, options = (None, args) if not args or args[0].startswith("-") else (args[0], args[1:])

    import torch

    from .execution.torchrun.link import FINISHED_KEY, Hello, Link, hello_key

    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    master = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    # One namespace per job and restart in torchrun's store.
    prefix = (
        f"sampler-conformance/{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}/"
        f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/"
    )
    hello = Hello(
        rank=rank,
        host=socket.gethostname(),
        pid=os.getpid(),
        local_rank=local_rank,
        local_world_size=int(os.environ.get("LOCAL_WORLD_SIZE", world_size)),
        has_gpu=torch.cuda.is_available() and torch.cuda.device_count() > local_rank,
    )
    link = Link(*master, prefix)
    link.put(hello_key(rank), hello)
    if rank != 0:
        from .execution.torchrun.agent import Agent

        code = Agent(link, hello, master, prefix).serve(on_finish=lambda code: _exit_on_sigterm(code, hello))
        # Exit together: torchrun tears the job down (SIGTERM) once any worker exits non-zero.
        link.wait_for_count(FINISHED_KEY, world_size, FINISH_WAIT_S)
        _exit(code, hello)
    _exit(_certify(link, hello, world_size, master, prefix, spec, options), hello)


def _certify(
    link, hello, world_size: int, master: tuple[str, int], prefix: str, spec: str | None, options: list[str]
) -> int:
    """Rank 0: run pytest over torchrun's ranks; tell every worker the exit code."""
    import pytest

    from .execution.torchrun.link import CONTROLLER, FINISHED_KEY, Finish

    stop = threading.Event()
    beat_link = link.clone()

    def beat() -> None:  # the workers' sign that rank 0 lives, while pytest runs
        while not stop.wait(BEAT_EVERY_S):
            beat_link.beat(CONTROLLER)

    threading.Thread(target=beat, name="controller-beat", daemon=True).start()
    plugin = _Rank0Plugin(link, hello, world_size, master, prefix)
    code = int(pytest.ExitCode.INTERNAL_ERROR)
    try:
        code = int(pytest.main(_pytest_arguments(spec, world_size, options), plugins=[plugin]))
    finally:
        _exit_on_sigterm(code, hello)
        plugin.commands.post(Finish(code))
        if not plugin.serving:
            link.count(FINISHED_KEY, 1)  # rank 0's own worker never started (a usage error): nothing to close
        if not link.wait_for_count(FINISHED_KEY, world_size, FINISH_WAIT_S):
            print(f"{NAME}: not every rank took the exit code within {FINISH_WAIT_S:g} s", file=sys.stderr)
        stop.set()
    return code


class _Rank0Plugin:
    """Rank 0's pytest plugin: starts rank 0's own worker and hands ``conformance/conftest.py``
    the pools of torchrun's ranks (registered under PLUGIN_NAME). The harness is imported
    here, once pytest runs, so that pytest's assertion rewriting sees its modules first."""

    def __init__(self, link, hello, world_size: int, master: tuple[str, int], prefix: str) -> None:
        from .execution.torchrun.link import PLUGIN_NAME, Commands

        self.__name__ = PLUGIN_NAME  # the name pytest registers it under
        self.link, self.hello, self.world_size, self.master, self.prefix = link, hello, world_size, master, prefix
        self.commands = Commands(link)
        self.pools: TorchrunPools | None = None
        self.serving = False

    def pytest_configure(self, config) -> None:
        import pytest

        from .execution.torchrun.agent import Agent
        from .execution.torchrun.link import hello_key
        from .execution.torchrun.pool import TorchrunPools
        from .pytest_plugin.options import option_named, setting

        own_rank = Agent(self.link.clone(), self.hello, self.master, self.prefix)  # rank 0's child, like every worker's
        threading.Thread(target=own_rank.serve, name="rank-0-worker", daemon=True).start()
        self.serving = True
        hellos = []
        for rank in range(self.world_size):
            if not self.link.wait_for(hello_key(rank), HELLO_WAIT_S):
                raise pytest.UsageError(f"torchrun's rank {rank} did not start within {HELLO_WAIT_S:g} s")
            hellos.append(self.link.take(hello_key(rank)))
        self.pools = TorchrunPools(self.commands, hellos, setting(config, option_named("rank-timeout")))

    def pytest_unconfigure(self, config) -> None:
        if self.pools is not None:
            self.pools.close()


def _pytest_arguments(spec: str | None, world_size: int, options: list[str]) -> list[str]:
    """The console script's run, at torchrun's world size."""
    from .cli import pytest_arguments

    return pytest_arguments(spec, [f"--world-sizes={world_size}", *options])


def _exit_on_sigterm(code: int, hello) -> None:
    """From now on, torchrun's teardown (SIGTERM, sent once another worker has exited
    non-zero) ends this worker as _exit does, with ``code`` too, not with -15."""
    signal.signal(signal.SIGTERM, lambda *_: _exit(code, hello))


def _exit(code: int, hello=None, line: str = "") -> NoReturn:
    """Say which rank exits with which code, and exit; skip interpreter finalisation
    (garbage-collecting torch takes seconds). Written with os.write: this also runs as a
    signal handler, possibly in the middle of a print."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # torchrun's teardown must not cut this short
    if hello is not None:
        line = f"{NAME}: rank {hello.rank} on {hello.host} exits with {code}"
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, RuntimeError, ValueError):  # reentrant flush inside the handler
            pass
    if line:
        os.write(2 if code else 1, (line + "\n").encode())
    os._exit(code)


if __name__ == "__main__":
    main()
