"""Running a script as ``python SCRIPT ARGS`` would, in a child forked from the fork server
(torch imported already: a fresh interpreter would cost 1.5 s a script), its output captured:
the reproduction scripts are run before they are offered (docs/reproductions.md).

Each child is waited for at most its bound, then killed, and always reaped."""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import runpy
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .global_rng import seed_global_rngs_afresh

REAP_S = 5.0  # what a child killed (or one that answered) gets to exit
# Scripts run side by side, as many as the machine has cores: each gets about a core for its
# bound. All at once, eight scripts that each import funasr (20 s of CPU) on 2 cores passed
# their shared 60 s bound, and three scripts that reproduce were not offered.
AT_ONCE = max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ScriptRun:
    exit_code: int | None  # None: it gave no exit code (it hung, or died)
    output: str  # stdout and stderr, interleaved as written
    failure: str = ""  # why it did not run to an exit: it raised, hung or died; empty where it did


def run_scripts(
    paths: Sequence[str], argv: Sequence[str] = (), timeout_s: float = 60.0, fresh_server: bool = False
) -> list[ScriptRun]:
    """Each script in a child of its own, :data:`AT_ONCE` at a time, each waited for at most ``timeout_s``.
    ``fresh_server``: the children fork from a fresh interpreter's server, not from this
    process's: where this process imported a package and forgot it (``specs.forgot_a_package``),
    a script importing it again in a fork of this process fails where ``python SCRIPT`` does not
    (datasets' Arrow types, registered twice: ArrowKeyError), as the cost probe's children would."""
    from .processes import fork_server_for  # not at import: it imports the rank body

    context = fork_server_for(fresh_server)
    runs: list[ScriptRun] = []
    for first in range(0, len(paths), AT_ONCE):
        started = []
        for path in paths[first : first + AT_ONCE]:
            receiving, sending = context.Pipe(duplex=False)
            # Not daemonic: a script may start processes of its own, as `python SCRIPT` may (a
            # DataLoader's workers); each child is reaped below, killed past its bound.
            child = context.Process(target=_run_here, args=(sending, path, tuple(argv)), daemon=False)
            child.start()
            sending.close()
            started.append((child, receiving))
        deadline = time.monotonic() + timeout_s  # those side by side: one bound for them
        runs += [_outcome(child, receiving, deadline, timeout_s) for child, receiving in started]
    return runs


def _outcome(child: Any, receiving: Any, deadline: float, timeout_s: float) -> ScriptRun:
    try:
        if not receiving.poll(max(0.0, deadline - time.monotonic())):
            return ScriptRun(None, "", f"it gave no exit code within {timeout_s:.0f} s")
        try:
            return ScriptRun(**receiving.recv())
        except EOFError:
            pass  # it died before it answered: its exit code says how
    finally:
        receiving.close()
        if child.is_alive():
            child.join(REAP_S)
        if child.is_alive():
            child.kill()
            child.join(REAP_S)
    return ScriptRun(None, "", f"the process died (exit code {child.exitcode})")


def _run_here(conn: Any, path: str, argv: tuple[str, ...]) -> None:
    """In the child: the script as its __main__, its output captured; its exit code, or what it raised."""
    seed_global_rngs_afresh()  # as in `python SCRIPT`: a sampler that draws from them shows it flaky
    # As in `python SCRIPT` too: the interpreter's own start method (fork on Linux before Python
    # 3.14), not the suite's forkserver, which would start a script's DataLoader workers as fresh
    # interpreters importing it (and torch) again: 1.2 s a stream script, and a crash unguarded.
    multiprocessing.set_start_method(None, force=True)
    captured = io.StringIO()
    sys.argv = [path, *argv]
    exit_code, failure = 0, ""
    with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as stop:
            code = stop.code
            exit_code = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)  # as the interpreter does with sys.exit("message")
        except BaseException as exc:
            traceback.print_exc()
            exit_code, failure = 1, f"it raised {type(exc).__name__}: {str(exc)[:200]}"
    conn.send({"exit_code": exit_code, "output": captured.getvalue(), "failure": failure})
    conn.close()
