"""The fork server started by fork (harness/execution/fork_server.py): started that way only when it
is safe, serves children that can start fork servers of their own, and otherwise falls
back to multiprocessing's own start. Each case runs in a fresh interpreter, whose
multiprocessing state this process's does not share."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

SCRIPT = """
import sys, threading
from multiprocessing import forkserver
from sampler_conformance.execution.fork_server import fork_server_context

def start_a_grandchild():
    # A child of the server starts a fork server of its own, as each rank does for its
    # loader workers: it must not wait on state the server inherited mid-start.
    child = fork_server_context(["json"]).Process(target=print, args=("grandchild ran",))
    child.start()
    child.join(30)
    if child.exitcode is None:
        child.kill()  # stuck: leave no process behind
    sys.exit(0 if child.exitcode == 0 else 1)

if __name__ == "__main__":
    if sys.argv[1] == "with-a-thread":
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    context = fork_server_context(["json"])
    child = context.Process(target=start_a_grandchild)
    child.start()
    # Read after a child started: by then a server started the stock way has exec'd (its
    # command line is the parent's until then).
    server = forkserver._forkserver._forkserver_pid
    with open(f"/proc/{server}/cmdline", "rb") as cmdline:
        print("exec'd" if b"forkserver import main" in cmdline.read() else "forked")
    child.join(60)
    print("child exit", child.exitcode)
    if child.exitcode is None:
        child.kill()
"""


@pytest.mark.parametrize(
    "threads, started",
    [("alone", "forked"), ("with-a-thread", "exec'd")],
    ids=["single-threaded-forks", "another-thread-falls-back"],
)
def test_fork_server_starts_by_fork_only_when_safe_and_serves_either_way(tmp_path, threads, started):
    script = tmp_path / "start_server.py"
    script.write_text(SCRIPT)
    run = subprocess.run([sys.executable, str(script), threads], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == started, run.stdout
    assert "grandchild ran" in lines and lines[-1] == "child exit 0", run.stdout + run.stderr


SEPARATE_SCRIPT = """
import ast
import os
from sampler_conformance.execution.fork_server import fork_server_context, separate_fork_server_context

def report(queue):
    queue.put((os.getppid(), hash("a str")))

if __name__ == "__main__":
    contexts = [fork_server_context(["json"])] + [separate_fork_server_context(1, ["json"])] * 2
    queue = contexts[0].Queue()
    children = [context.Process(target=report, args=(queue,)) for context in contexts]
    for child in children:
        child.start()
        child.join(60)
    print(sorted(queue.get(timeout=10) for _ in children))
"""


def test_a_separate_fork_server_has_its_own_parent_and_hash_seed(tmp_path):
    """The ranks of a group come from separate servers (harness.execution.rank_pool): two children of
    one separate server share its parent and hash seed, and differ from the global server's."""
    script = tmp_path / "separate_servers.py"
    script.write_text(SEPARATE_SCRIPT)
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=environment)
    assert run.returncode == 0, run.stderr
    (first_parent, first_hash), (second_parent, second_hash), (third_parent, third_hash) = ast.literal_eval(run.stdout)
    assert len({first_parent, second_parent, third_parent}) == 2, run.stdout
    assert len({first_hash, second_hash, third_hash}) == 2, run.stdout


STALE_SCRIPT = """
import logging, os, sys
from sampler_conformance.execution.fork_server import fork_server_context

def log_a_warning(fresh_path):
    handler = logging.getLogger("library").handlers[0]
    # Open the fresh file until the handler's number is reached or passed: a closed number
    # is handed out again, a number pointed at /dev/null is not.
    fresh = os.open(fresh_path, os.O_RDWR | os.O_CREAT)
    while fresh < handler.stream.fileno():
        fresh = os.open(fresh_path, os.O_RDWR)
    number = handler.stream.fileno()
    print("the handler's number leads to", "/dev/null" if os.path.samestat(os.fstat(number), os.stat(os.devnull)) else "another file")
    logging.getLogger("library").warning("Too many dataloader workers")
    with open(fresh_path) as f:
        print("fresh file holds", repr(f.read()))

if __name__ == "__main__":
    # As a library configures its logger on the stream it found (pytest's capture file).
    # A high number, above the few a child opens while it starts.
    os.dup2(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT), 50)
    logging.getLogger("library").addHandler(logging.StreamHandler(open(50, "w")))
    child = fork_server_context(["json"]).Process(target=log_a_warning, args=(sys.argv[2],))
    child.start()
    child.join(60)
    print("child exit", child.exitcode)
"""


def test_objects_inherited_from_the_parent_never_write_into_a_childs_files(tmp_path):
    """A logging handler the parent set up before the server forked writes to a number the
    server let go of: in a child its writes go nowhere, not into the file that took the number."""
    script = tmp_path / "stale.py"
    script.write_text(STALE_SCRIPT)
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "parent.log"), str(tmp_path / "fresh.bin")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    expected = ["the handler's number leads to /dev/null", "fresh file holds ''", "child exit 0"]
    assert run.stdout.splitlines() == expected, run.stdout + run.stderr


LATE_MODULE_SCRIPT = """
import sys
from sampler_conformance.execution.collectives import modules_pickled
from sampler_conformance.execution.fork_server import fork_server_context, server_for_modules

def report(name, queue):
    queue.put(name in sys.modules)  # before anything here imports it

if __name__ == "__main__":
    context = fork_server_context(["json"])
    import late_library  # imported after the server forked, as a rank imports the spec
    needed = modules_pickled(late_library.Dataset())
    served = server_for_modules(needed)
    print("needs late_library" if "late_library" in needed else sorted(needed))
    print("no server for what the server has" if server_for_modules({"json"}) is None else "a needless server")
    queue = context.Queue()
    for start in (context, served):
        child = start.Process(target=report, args=("late_library", queue))
        child.start()
        child.join(60)
        print("imported at start" if queue.get(timeout=10) else "imports it itself")
"""


def test_a_dataset_from_a_module_imported_after_the_server_forked_gets_a_server_that_imported_it(tmp_path):
    """A rank forks its loader workers' server before it loads the spec: a dataset whose pickle
    names a module imported since (a library the factory imports lazily) is read by workers
    of a server that imported it once, not by workers that each import it (transformers'
    IterableDatasetShard: 227 s for the whole certification, 35 s with that server)."""
    (tmp_path / "late_library.py").write_text("class Dataset:\n    pass\n")
    script = tmp_path / "late_module.py"
    script.write_text(LATE_MODULE_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "needs late_library",
        "no server for what the server has",
        "imports it itself",
        "imported at start",
    ], run.stdout + run.stderr


PRESTART_SCRIPT = """
from sampler_conformance.execution.fork_server import _SEPARATE_SERVERS, stop_fork_servers
from sampler_conformance.execution.rank_pool import RankPool, start_fork_servers_for

if __name__ == "__main__":
    start_fork_servers_for([1, 2, 4])
    print(sorted(key for key, server in _SEPARATE_SERVERS.items() if server._forkserver_pid is not None))
    pool = RankPool(4, "gloo", 60)
    pool.start()  # its ranks past the first fork from the servers started above
    print(pool.running)
    pool.close()
    stop_fork_servers()
"""


def test_the_group_ranks_fork_servers_start_before_the_groups(tmp_path):
    """start_fork_servers_for (called by the plugin once real groups are collected) starts the
    fork servers the groups' ranks come from, one per position past the first, without
    waiting, and a group of the largest size then starts from them."""
    script = tmp_path / "prestart.py"
    script.write_text(PRESTART_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[1,", "2,", "3]", "True"], run.stdout + run.stderr


SHARED_SCRIPT = """
import json, os, subprocess, sys
from dataclasses import dataclass
from sampler_conformance.subjects.index_sampler.case import IndexCase
from sampler_conformance.execution.scenario import Scenario

SEED = 7

@dataclass(frozen=True)
class Report(Scenario):  # each rank: its parent, its hash of a str, and a mark of the controller's environment
    def load(self):
        return None

    def run(self, rank):
        return os.getppid(), hash("a str"), os.environ.get("MARK")

def descendant(seed):
    from sampler_conformance.execution.hash_seeds import seed_hashes
    from sampler_conformance.execution.rank_pool import RankPool
    seed_hashes(seed)
    os.environ["MARK"] = "the controller's"
    pool = RankPool(2, "gloo", 60)
    pool.start()
    replies = pool.request(Report("", None, IndexCase(dataset_size=4, world_size=2)))
    pool.close()
    print(json.dumps(replies[1]))

if __name__ == "__main__":
    if sys.argv[1:]:
        descendant(int(sys.argv[1]))
        sys.exit(0)
    from sampler_conformance.execution.fork_server import SHARED_SERVERS_VARIABLE, _SEPARATE_SERVERS, share_separate_fork_servers
    from sampler_conformance.execution.hash_seeds import derived_hash_seed
    from sampler_conformance.execution.processes import FORK_SERVER_PRELOAD
    shared = share_separate_fork_servers([1], SEED, FORK_SERVER_PRELOAD)
    server = _SEPARATE_SERVERS[("shared", 1)]._forkserver_pid
    expected_hash = int(subprocess.run([sys.executable, "-c", "print(hash('a str'))"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONHASHSEED": str(derived_hash_seed(SEED, 1))}).stdout)
    for seed in (SEED, SEED + 1):  # the same certification seed uses the shared server; another starts its own
        env = {**os.environ, SHARED_SERVERS_VARIABLE: shared, "PYTHONHASHSEED": str(derived_hash_seed(seed, 0))}
        run = subprocess.run([sys.executable, __file__, str(seed)], env=env, capture_output=True, text=True, timeout=120)
        parent, hashed, mark = json.loads(run.stdout.splitlines()[-1])
        print(seed == SEED, parent == server, hashed == expected_hash, mark)
"""


def test_a_shared_fork_server_serves_the_certifications_that_would_start_the_same_one(tmp_path):
    """share_separate_fork_servers (the selftests' warm pytest shares the group ranks' servers
    with every certification it runs): a descendant whose certification seed gives the same
    hash seed forks its rank from the shared server, which hashes as that position should;
    one of another seed starts its own. Either way the rank runs in its controller's
    environment, not in the environment its server started with."""
    script = tmp_path / "shared.py"
    script.write_text(SHARED_SCRIPT)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "True True True the controller's",
        "False False False the controller's",
    ], run.stdout + run.stderr
