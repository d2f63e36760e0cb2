"""The part of a reproduction script (docs/reproductions.md) that reads the ranks in real
processes, for a failure only a process group shows (the group's defaults, a sampler that
takes its rank from the group, a DataLoader in each rank, a device mesh): W processes
started with ``torch.multiprocessing`` (forked on Linux, torch imported already; spawned elsewhere),
each joining one gloo group over a file rendezvous in a fresh temporary folder (no port to
collide on), reading its rank with the script's own ``read_in_group(world, rank)`` and
sending the reading back through a pipe. A group gloo fails to connect is started again,
twice at most (seen about once in eight groups on 2 busy cores). Every wait is
bounded: a rank that raised, hung past the bound or died is reported by rank, every process
is reaped (killed past the bound) and the group destroyed, and the script exits 2, neither
the bug shown (1) nor the promise held (0).

A subject's script defines ``read_in_group`` and ``Sampler`` (or what its reading loads),
puts :data:`RUN_RANKS` beside them, and its main part under ``if __name__ == "__main__":``
(:func:`guarded`), since every rank's process imports the script."""

from __future__ import annotations

import textwrap

# What RUN_RANKS needs imported, besides the standard modules every script imports.
GROUP_IMPORTS = ("datetime", "shutil", "tempfile", "time", "traceback", "torch")
# A rank's reading of a shrunk case takes well under a second; a rank still reading past this hangs.
RANK_TIMEOUT_S = 60
# The script's exit code where a rank raised, hung or died: neither the bug shown (1) nor the promise held (0).
RANKS_FAILED = 2

# {timeout} and {failed} are filled in; {{ }} stays a brace.
RUN_RANKS = '''TIMEOUT_S = {timeout}  # every wait is bounded: a rank that reads longer than this hangs


def in_group(rank, world, folder, sending):
    """One rank's process: it joins the gloo group (a file rendezvous in ``folder``), reads
    its rank (read_in_group) and sends the reading back, or the traceback of what it raised."""
    # The platform's own start method for what the rank starts (its DataLoader's workers), as in a
    # rank torchrun starts, not one its parent set (a forkserver would import this file again).
    torch.multiprocessing.set_start_method(None, force=True)
    # What torchrun exports to each rank, as the suite's ranks have it: a library may read it (accelerate's state).
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world))
    try:
        torch.distributed.init_process_group("gloo", init_method=f"file://{{folder}}/rendezvous", rank=rank,
                                             world_size=world, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    except Exception as exc:  # the group did not form (gloo's sockets, on a busy machine): started again
        sending.send(("could not join the group", f"{{type(exc).__name__}}: {{exc}}"))
        return
    try:
        sending.send(("read", read_in_group(world, rank)))
    except Exception as exc:  # the sampler's own, the parent prints it; or gloo's, in a group the reading made
        joined = "connectFullMesh" not in str(exc)  # a mesh's dimension that did not form: started again
        sending.send(("raised", traceback.format_exc()) if joined else ("could not join the group", str(exc)))
    finally:
        torch.distributed.destroy_process_group()


def start_group(world):
    """Each rank's (how, what): its reading, or how it failed; every process reaped, past the bound killed."""
    # Forked from this process on Linux, torch imported already (a fresh interpreter a rank costs 1.5 s
    # of importing); spawned elsewhere, where forking a process that imported torch is not safe.
    context = torch.multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    folder = tempfile.mkdtemp()
    pipes = [context.Pipe(duplex=False) for _ in range(world)]
    processes = [context.Process(target=in_group, args=(r, world, folder, pipes[r][1])) for r in range(world)]
    replies = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for process in processes:
            process.start()
        for _, sending in pipes:
            sending.close()  # the rank's end only: a rank that dies is an end of file here
        for r, (receiving, _) in enumerate(pipes):
            if not receiving.poll(max(0.0, deadline - time.monotonic())):
                replies.append(("hung", f"no reading within {{TIMEOUT_S}} s"))
                continue
            try:
                replies.append(receiving.recv())
            except EOFError:
                processes[r].join(5.0)
                replies.append(("died", f"its process ended without a reading (exit code {{processes[r].exitcode}})"))
    finally:
        for process in processes:
            if process.pid is not None:
                process.join(max(1.0, deadline - time.monotonic()))
                if process.is_alive():
                    process.kill()
                    process.join()
        shutil.rmtree(folder, ignore_errors=True)
    return replies


def run_ranks(world):
    """Every rank's reading, each rank a process of one gloo group on this machine (started
    again, twice at most, where it did not form). A rank that raised, hung or died is printed, and the
    script exits {failed}."""
    for _ in range(3):  # gloo's mesh fails to connect now and then on a busy machine: started again
        replies = start_group(world)
        if all(how != "could not join the group" for how, _ in replies):
            break
    failed = [(r, how, what) for r, (how, what) in enumerate(replies) if how != "read"]
    for r, how, what in failed:
        print(f"rank {{r}} {{how}}: {{what}}")
    if failed:
        sys.exit({failed})
    return [what for _, what in replies]'''

GUARD = (
    'if __name__ == "__main__":  # every rank\'s process imports this file: only the script itself reads the ranks\n'
)


def run_ranks(timeout_s: float = RANK_TIMEOUT_S) -> str:
    """The script's ``run_ranks(world)`` and its helpers, each wait bounded by ``timeout_s``."""
    return RUN_RANKS.format(timeout=timeout_s, failed=RANKS_FAILED)


def guarded(main: str) -> str:
    """``main`` (module-level lines) under the ``__main__`` guard, which the ranks' processes skip."""
    return GUARD + textwrap.indent(main.strip("\n"), "    ", lambda line: bool(line.strip())) + "\n"
