"""Whose fault is it: the sampler's, or the suite's?

A failure counts against the sampler only with evidence: a frame of the sampler's code
(anything outside the machinery below) on the stack of the exception, of a hung rank, or
of a rank that died. Without one, say a loader worker that never delivered or a
rendezvous that failed, it is an error of the suite, reported as such.
"""

from __future__ import annotations

import linecache
import re
import sysconfig
import traceback
from pathlib import Path
from types import TracebackType

_HARNESS = str(Path(__file__).resolve().parent.parent)  # the package root, harness/: execution/ lies one level down
_STDLIB = str(Path(sysconfig.get_paths()["stdlib"]).resolve())
# torch's own machinery the suite drives: collectives and the DataLoader. Samplers that
# ship with torch (torch/utils/data/distributed.py, sampler.py) are not machinery.
_TORCH_MACHINERY = (
    "torch/distributed/",
    "torch/utils/data/dataloader.py",
    "torch/utils/data/_utils/",
    "torch/multiprocessing/",
)
# faulthandler's line for one frame: File "PATH", line N in NAME
_FAULTHANDLER_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<name>\S+)', re.MULTILINE)


def is_machinery(path: str) -> bool:
    if path.startswith("<"):  # <string>, <frozen ...>: interpreter start-up
        return True
    resolved = str(Path(path).resolve()) if path.startswith("/") else path
    if resolved.startswith(_HARNESS):
        return True
    if resolved.startswith(_STDLIB) and "-packages" not in resolved:  # the stdlib, not what pip installed beside it
        return True
    return any(part in resolved.replace("\\", "/") for part in _TORCH_MACHINERY)


# A frame as a traceback prints it: File "PATH", line N, in NAME
_TRACEBACK_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)', re.MULTILINE)
# How torch's DataLoader re-raises in the main process what a worker raised: the worker's
# traceback survives only as text in the message.
_WORKER_TRACEBACK = "Original Traceback (most recent call last):"


def sampler_frames_in_traceback(tb: TracebackType | None) -> list[str]:
    """``path:line in name`` of each frame of an exception's traceback outside the machinery."""
    return [f"{f.filename}:{f.lineno} in {f.name}" for f in traceback.extract_tb(tb) if not is_machinery(f.filename)]


def sampler_frames_in_exception(exc: BaseException) -> list[str]:
    """The same, and for an exception a DataLoader worker raised, the frames of the worker's
    own traceback (a dataset read through workers runs there)."""
    frames = sampler_frames_in_traceback(exc.__traceback__)
    message = str(exc)
    if _WORKER_TRACEBACK in message:
        worker_part = message.split(_WORKER_TRACEBACK, 1)[1]
        frames += [
            f"{m['path']}:{m['line']} in {m['name']} (in a DataLoader worker)"
            for m in _TRACEBACK_FRAME.finditer(worker_part)
            if not is_machinery(m["path"])
        ]
    return frames


def sampler_frames_in_dump(text: str) -> list[str]:
    """The same, for a faulthandler dump (a hung or crashed process's stacks)."""
    return [f"{m['path']} in {m['name']}" for m in _FAULTHANDLER_FRAME.finditer(text) if not is_machinery(m["path"])]


def readable_traceback(exc: BaseException) -> str:
    """The traceback to show for ``exc``: only the sampler's frames and the exception when
    there are any (the harness's own frames are noise to the sampler's author), else all."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not is_machinery(f.filename)]
    if not frames:
        return "".join(traceback.format_exception(exc))
    return (
        "Traceback (the sampler's frames, most recent call last):\n"
        + "".join(traceback.format_list(frames))
        + "".join(traceback.format_exception_only(exc))
    )


def with_source_lines(dump: str) -> str:
    """A faulthandler dump with each frame's source line under it, as a traceback shows it."""
    lines = []
    for line in dump.splitlines():
        lines.append(line)
        frame = _FAULTHANDLER_FRAME.match(line)
        source = linecache.getline(frame["path"], int(frame["line"])).strip() if frame else ""
        if source:
            lines.append(f"    {source}")
    return "\n".join(lines)
