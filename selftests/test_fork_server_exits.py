"""How the processes of the fork servers (harness/execution/fork_server.py) end: a killed rank's
loader workers and server end with it, every child lets go of its server's "alive" pipe,
stopped servers are gone at once, and a closed pool leaves no process behind, not even a
zombie. Each case runs in a fresh interpreter, whose processes this one does not share."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .suite_run import PROPERTIES

RANK_KILLED_SCRIPT = """
import os, signal, sys, time
import torch
from torch.utils.data import IterableDataset
from sampler_conformance.execution.collectives import loader_worker_options, release_fork_server
from sampler_conformance.execution.fork_server import fork_server_context, leave_the_parent_server

class Endless(IterableDataset):  # at module level: a worker started by a fork server unpickles it
    def __iter__(self):
        while True:
            yield torch.zeros(1)

def released_late(worker_id):
    # The rank is killed while its workers start: the last worker to let go of the server
    # ends it at once, the race that left a worker running.
    time.sleep(1)
    release_fork_server(worker_id)

def rank(queue):
    # What a rank does (harness.execution.rank_body): let go of the server it came from, start
    # its own for its loader workers, then read through a DataLoader that has workers.
    leave_the_parent_server()
    fork_server_context(["torch"])
    from multiprocessing import forkserver
    from torch.utils.data import DataLoader

    options = dict(loader_worker_options(2), worker_init_fn=released_late)
    batches = iter(DataLoader(Endless(), batch_size=1, num_workers=2, **options))
    queue.put([forkserver._forkserver._forkserver_pid] + [worker.pid for worker in batches._workers])
    time.sleep(600)

def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False

if __name__ == "__main__":
    context = fork_server_context(["torch"])
    queue = context.Queue()
    child = context.Process(target=rank, args=(queue,))
    child.start()
    server_and_workers = queue.get(timeout=60)
    os.kill(child.pid, signal.SIGKILL)  # as a rank dies with a killed controller (PR_SET_PDEATHSIG)
    child.join(10)
    deadline = time.monotonic() + 30  # torch's worker watchdog looks every 5 s
    while time.monotonic() < deadline and any(map(running, server_and_workers)):
        time.sleep(0.5)
    left = [pid for pid in server_and_workers if running(pid)]
    print(left)
    for pid in left:  # where each is stuck, for a failure's message: its threads' kernel wait channels
        try:
            threads = os.listdir(f"/proc/{pid}/task")
            print(pid, "waits in", [open(f"/proc/{pid}/task/{t}/wchan").read() for t in threads], file=sys.stderr)
        except OSError:  # it ended meanwhile
            pass
    for pid in server_and_workers:  # leave nothing behind, whatever the verdict
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_a_killed_ranks_loader_workers_and_their_server_end_with_it(tmp_path):
    """A rank killed as its loader workers start (its controller killed) leaves no loader
    worker and no fork server behind: the workers let go of their server's "alive" pipe as
    they start (collectives.loader_worker_options), so the server ends with the rank, and the
    workers, whose parent it is, with the server, even the one whose letting go ended it."""
    script = tmp_path / "rank_killed.py"
    script.write_text(RANK_KILLED_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", f"still running after the rank was killed: {run.stdout}{run.stderr}"


DEFAULT_START_SCRIPT = """
import multiprocessing
from multiprocessing import forkserver
from sampler_conformance.execution.fork_server import fork_server_context

def report(queue):
    queue.put(forkserver._forkserver._forkserver_alive_fd)

if __name__ == "__main__":
    context = fork_server_context(["json"])
    multiprocessing.set_start_method("forkserver", force=True)  # as a loader the suite did not build starts
    queue = context.Queue()
    child = multiprocessing.Process(target=report, args=(queue,))
    child.start()
    child.join(60)
    print(queue.get(timeout=10))
"""


def test_a_child_of_the_fork_server_started_by_the_default_method_lets_go_of_it(tmp_path):
    """A loader under test starts its workers by the process's default start method, with no
    worker_init_fn of the suite's (collectives.default_start_from_fork_server): each still lets
    go of the server's "alive" pipe as it starts, so a rank killed with its controller leaves
    neither server nor workers behind (as test_a_killed_ranks_loader_workers_and_their_server_end_with_it)."""
    script = tmp_path / "default_start.py"
    script.write_text(DEFAULT_START_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "None", f"the child holds the server's alive pipe: fd {run.stdout}{run.stderr}"


STOPPED_SCRIPT = """
import os, sys
from multiprocessing import forkserver
import pytest
from sampler_conformance.execution.fork_server import (
    _SEPARATE_SERVERS, fork_server_context, separate_fork_server_context, stop_fork_servers,
)

if __name__ == "__main__":
    for context in (fork_server_context(["json"]), separate_fork_server_context("position 1", ["json"])):
        child = context.Process(target=print, args=("served",))
        child.start()
        child.join(60)
    servers = [forkserver._forkserver._forkserver_pid, *(s._forkserver_pid for s in _SEPARATE_SERVERS.values())]
    # A run inside this program (its unconfigure stops what the run started) leaves them running.
    pytest.main([sys.argv[1], "--collect-only", "-q", "-p", "no:cacheprovider"])
    print("after the run", [pid for pid in servers if os.path.exists(f"/proc/{pid}")] == servers)
    stop_fork_servers()
    print(len(servers), [pid for pid in servers if os.path.exists(f"/proc/{pid}")])
"""


def test_stopped_fork_servers_are_gone_at_once(tmp_path):
    """stop_fork_servers (at the end of a run: the plugin's unconfigure) ends and reaps this process's own
    server and the separate ones there and then: left to notice their parent's exit, each
    shut down torch's interpreter for seconds after the command had returned, orphaned. A run
    inside the program (pytest's inline runs, the API) stops only what it started: test_catalogue's
    inline collection stopped the selftests' shared rank servers, and about 90 certifications
    after it each started their own."""
    script = tmp_path / "stopped.py"
    script.write_text(STOPPED_SCRIPT)
    run = subprocess.run([sys.executable, str(script), str(PROPERTIES)], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split("\n")
    assert lines[-3] == "after the run True", f"the run stopped the program's servers: {run.stdout}{run.stderr}"
    assert lines[-2] == "2 []", f"servers left after the stop: {run.stdout}{run.stderr}"


REAPED_SCRIPT = r"""
import os, time
from sampler_conformance.execution.fork_server import stop_fork_servers
from sampler_conformance.execution.rank_pool import RankPool


def others_in_session():
    # Every other process of this session, a zombie too: what it is, or "defunct" once it ended unreaped.
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[3]) == os.getsid(0) and "resource_tracker" not in command:
            found.append("defunct" if fields[0] == "Z" else command[:80])
    return found


if __name__ == "__main__":
    pool = RankPool(1, "gloo", 60)
    pool.start()  # its rank forks its loader workers' fork server as it starts
    pool.close()
    stop_fork_servers()
    print(others_in_session())
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_a_closed_pool_leaves_no_process_of_its_session_not_even_a_zombie(tmp_path):
    """A rank stops and reaps its loader workers' fork server before it exits: left to exit
    after the rank, the server was a zombie that whatever adopted it had to reap (seen: one
    per rank, after a certification had ended). The script runs in a session of its own."""
    script = tmp_path / "reaped.py"
    script.write_text(REAPED_SCRIPT)
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, start_new_session=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout + run.stderr
