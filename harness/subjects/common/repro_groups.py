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
(:func:`guarded`), since every rank's process imports the script.

For a failure that only separate interpreters show (an order seeded by ``hash()`` of a str, or
by a generator the OS seeds), :data:`FRESH_PROCESSES` reads each rank in a fresh interpreter
instead, the script started again as torchrun starts a job's processes, each with the hash
seed the suite gave that rank's process (:func:`process_hash_seeds`) and its global RNGs seeded
with it; bounded and reaped alike."""

from __future__ import annotations

import textwrap

from sampler_conformance.execution.hash_seeds import hash_seed_for

# What RUN_RANKS needs imported, besides the standard modules every script imports.
GROUP_IMPORTS = ("datetime", "shutil", "tempfile", "time", "traceback", "torch")
# A rank's reading of a shrunk case takes well under a second; a rank still reading past this hangs.
RANK_TIMEOUT_S = 60
# The script's exit code where a rank raised, hung or died: neither the bug shown (1) nor the promise held (0).
RANKS_FAILED = 2
# A group gloo did not connect (about once in eight on 2 busy cores) is started again, twice at most.
GROUP_TRIES = 3

# {timeout}, {failed} and {tries} are filled in; {{ }} stays a brace.
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
    for _ in range({tries}):  # gloo's mesh fails to connect now and then on a busy machine: started again
        replies = start_group(world)
        if all(how != "could not join the group" for how, _ in replies):
            break
    failed = [(r, how, what) for r, (how, what) in enumerate(replies) if how != "read"]
    for r, how, what in failed:
        print(f"rank {{r}} {{how}}: {{what}}")
    if failed:
        sys.exit({failed})
    return [what for _, what in replies]'''

# For a failure that only separate interpreters show (an order seeded by hash() of a str, or by a
# generator the OS seeds): each rank read in a fresh interpreter of its own, this script started
# again, as torchrun starts a job's processes. The script defines HASH_SEEDS (each rank's process's,
# as the suite gave them). {timeout} and {failed} are filled in; {{ }} stays a brace.
FRESH_PROCESSES = '''TIMEOUT_S = {timeout}  # every wait is bounded: a process that reads longer than this hangs
RANK_OF_PROCESS = os.environ.get("REPRO_RANK_OF_PROCESS")  # set in the processes the script starts: the rank each reads


def start_processes(ranks):
    """Each of ``ranks`` read in a fresh interpreter, as torchrun starts a job's processes: this
    script started again with REPRO_RANK_OF_PROCESS set to the rank and PYTHONHASHSEED to its
    HASH_SEEDS, its reading on its last line (as JSON). A process that failed, hung or died is
    printed, and the script exits {failed}."""
    env = {{**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, sys.path))}}  # they import as this one does
    children = {{r: subprocess.Popen([sys.executable, __file__, SPEC], stdout=subprocess.PIPE, text=True, env={{
        **env, "REPRO_RANK_OF_PROCESS": str(r), "PYTHONHASHSEED": str(HASH_SEEDS[r])}}) for r in ranks}}
    deadline = time.monotonic() + TIMEOUT_S
    readings, failed = {{}}, []
    try:
        for r, child in children.items():
            try:
                lines = child.communicate(timeout=max(0.1, deadline - time.monotonic()))[0].splitlines()
            except subprocess.TimeoutExpired:
                failed.append(f"rank {{r}}'s process hung: no reading within {{TIMEOUT_S}} s")
                continue
            if child.returncode or not lines:
                failed.append(f"rank {{r}}'s process exited {{child.returncode}} without a reading")
                continue
            readings[r] = json.loads(lines[-1])
    finally:
        for child in children.values():  # every process reaped, past the bound killed
            if child.poll() is None:
                child.kill()
            child.wait()
    for line in failed:
        print(line)
    if failed:
        sys.exit({failed})
    return [readings[r] for r in ranks]


def in_process_of_rank(read):
    """In a process the script started: its global RNGs seeded with its hash seed (each process
    its own state, as a job's processes have theirs, fixed so that two runs print alike), then
    its rank's reading, read(rank), printed as JSON on its last line; and it exits."""
    rank = int(RANK_OF_PROCESS)
    random.seed(HASH_SEEDS[rank])
    numpy.random.seed(HASH_SEEDS[rank] % 2**32)
    torch.manual_seed(HASH_SEEDS[rank])
    print(json.dumps(read(rank), default=int))
    sys.exit(0)'''
# What FRESH_PROCESSES needs imported, besides the standard modules every script imports.
PROCESS_IMPORTS = ("json", "random", "subprocess", "time", "numpy", "torch")

GUARD = (
    'if __name__ == "__main__":  # every rank\'s process imports this file: only the script itself reads the ranks\n'
)


def run_ranks(timeout_s: float = RANK_TIMEOUT_S) -> str:
    """The script's ``run_ranks(world)`` and its helpers, each wait bounded by ``timeout_s``."""
    return RUN_RANKS.format(timeout=timeout_s, failed=RANKS_FAILED, tries=GROUP_TRIES)


def process_hash_seeds(world_size: int) -> list[int]:
    """Each rank's process's hash seed for FRESH_PROCESSES' ``HASH_SEEDS``: the one the suite gave
    the rank's process (``execution.hash_seeds``), or a fixed one where it left them random."""
    return [hash_seed_for(rank) or rank + 1 for rank in range(world_size)]


def fresh_processes(timeout_s: float = RANK_TIMEOUT_S) -> str:
    """The script's ``start_processes(ranks)`` and ``in_process_of_rank(read)``, each wait bounded by ``timeout_s``."""
    return FRESH_PROCESSES.format(timeout=timeout_s, failed=RANKS_FAILED)


def guarded(main: str) -> str:
    """``main`` (module-level lines) under the ``__main__`` guard, which the ranks' processes skip."""
    return GUARD + textwrap.indent(main.strip("\n"), "    ", lambda line: bool(line.strip())) + "\n"
