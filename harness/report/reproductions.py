"""The reproduction scripts of a failed certification (docs/reproductions.md): for each failed
invariant, a plain-Python script its subject writes from its smallest counterexample
(``Subject.reproduce``), run twice, each run in a child of the fork server, before it is
offered. One that does not exit 1 with the violation's words, the same both times, is taken
back, and the summary says why; one that is offered has an issue body beside it, ready to
paste (``issue_body.py``)."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sampler_conformance.core.contracts import Contract
from sampler_conformance.core.subject import CannotReproduce, Plug, Subject
from sampler_conformance.execution.scripts import ScriptRun, run_scripts
from sampler_conformance.subjects.specs import PACKAGE_ATTRIBUTE, forgot_a_package

from .certificate import certificate_paths
from .counterexamples import shown_first
from .issue_body import issue_body
from .results import FAILED, InvariantResult

# A script reads one shrunk case: past this it hangs, and is not offered.
SCRIPT_TIMEOUT_S = 60.0
# Where the scripts go without --repro-dir or --certificate: a folder per spec.
DEFAULT_DIR = Path(".sampler-conformance") / "repros"
# Why a script is missing where writing it raised: the suite's bug, not the sampler's.
SUITE_BUG = "the suite failed to write its script (a bug of this suite: please report it)"


@dataclass(frozen=True)
class Reproduction:
    script: str | None  # the script's absolute path, where it reproduced the failure
    why_not: str  # why there is none; empty where there is
    output: str  # what it printed, where it ran
    issue: str | None = None  # beside the script: an issue body to paste (issue_body.py)

    def line(self) -> str:
        """The summary's line under the failed invariant."""
        if self.script:
            issue = f"; an issue body to paste: {_shown(self.issue)}" if self.issue else ""
            return f"reproduce without the suite: python {_shown(self.script)}  (exits 1 while the bug is there{issue})"
        return f"no reproduction script: {self.why_not}"


def folder_for(option: str, certificate: str, spec: str) -> Path:
    """--repro-dir; else PATH.repros beside --certificate=PATH; else a folder of DEFAULT_DIR per spec."""
    if option:
        return Path(option)
    if certificate:
        json_path, _ = certificate_paths(certificate)
        return json_path.with_suffix(".repros")
    return DEFAULT_DIR / re.sub(r"[^A-Za-z0-9_.-]+", "_", spec).strip("_")


def reproduce(
    results: Sequence[InvariantResult], subject: Subject, plug: Plug, contract: Contract, folder: Path
) -> dict[str, Reproduction]:
    """Each failed invariant's reproduction, or why it has none, by flag."""
    found: dict[str, Reproduction] = {}
    written: dict[str, tuple[Path, dict[str, Any]]] = {}
    for result in results:
        if result.status != FAILED:
            continue
        try:
            path, record = _write(result, subject, plug, contract, folder)
        except CannotReproduce as cannot:
            found[result.flag] = Reproduction(None, str(cannot), "")
        except Exception as bug:  # the suite's own bug in writing it: said as such, and the verdict stands
            found[result.flag] = Reproduction(None, f"{SUITE_BUG}: {type(bug).__name__}: {bug}", "")
        else:
            written[result.flag] = path, record
    paths = [str(path) for path, _ in written.values()]
    # Twice each: a script must say the same each time.
    runs = run_scripts(paths * 2, timeout_s=SCRIPT_TIMEOUT_S, fresh_server=forgot_a_package())
    for (flag, (path, record)), first, second in zip(
        written.items(), runs[: len(paths)], runs[len(paths) :], strict=True
    ):
        why = _why_not_offered(first, second, record)
        if why:
            path.unlink()
            found[flag] = Reproduction(None, why, first.output)
            continue
        issue = path.with_suffix(".md")
        adapted = [distribution for _, distribution in getattr(plug.factory, PACKAGE_ATTRIBUTE, ())]
        issue.write_text(issue_body(plug.spec, contract, record["title"], path, first.output, adapted))
        found[flag] = Reproduction(str(path.resolve()), "", first.output, str(issue.resolve()))
    return found


def _write(
    result: InvariantResult, subject: Subject, plug: Plug, contract: Contract, folder: Path
) -> tuple[Path, dict[str, Any]]:
    """The script of the invariant's first counterexample a script can be written for (a
    shrunk one first, then the smallest), written to ``folder``; or CannotReproduce."""
    if subject.reproduce is None:
        raise CannotReproduce(f"the failures of a {subject.name} have no scripts yet")
    why = CannotReproduce("no counterexample with a case")
    filename = f"{result.flag}.py"
    for record in sorted(result.counterexamples, key=shown_first):
        try:
            text = subject.reproduce(plug, contract, record, filename)
        except CannotReproduce as cannot:
            why = cannot
            continue
        folder.mkdir(parents=True, exist_ok=True)
        (folder / filename).write_text(text)
        return folder / filename, record
    raise why


def _why_not_offered(first: ScriptRun, second: ScriptRun, record: dict[str, Any]) -> str:
    """Empty where the script reproduced the violation (exit 1, its words, the same output twice); else why not."""
    if first.failure:
        return f"the script did not reproduce it: {first.failure}"
    if first.exit_code != 1:
        return (
            f"the script exits {first.exit_code} on the counterexample's case: the sampler did not fail it again "
            f"there (it is flaky, or fails only in the suite's own processes)"
        )
    if f"[{record['title']}]" not in first.output:
        return "the script exits 1 without the violation's words"
    elsewhere = _raised_elsewhere(first.output, record)
    if elsewhere:
        return elsewhere
    if (second.exit_code, _scratch_unnamed(second.output)) != (first.exit_code, _scratch_unnamed(first.output)):
        return (
            "two runs of the script printed different things: the sampler is not deterministic on that case (it "
            "draws from a global RNG, say)"
        )
    return ""


# A temporary folder's name (tempfile's: a prefix, then 8 random characters of [a-z0-9_]). Each
# run of a script makes its own (its layout's, its DataLoader's work folder), and a sampler's
# message may print it ("The provided dataset `/tmp/layout-t2mne2ws` doesn't contain any
# index.json file"): two runs that differ only there printed the same.
_TEMPORARY_FOLDER = re.compile(re.escape(tempfile.gettempdir()) + r"/[\w.-]*?[a-z0-9_]{8}(?![\w-])")


def _scratch_unnamed(output: str) -> str:
    """``output`` with the random part of each temporary folder's name written XXXXXXXX."""
    return _TEMPORARY_FOLDER.sub(lambda found: found.group(0)[:-8] + "XXXXXXXX", output)


# A fault's words name what was raised ("the sampler raised IndexError in __iter__: ..."); the
# script prints its own finding after "here:" (the words line above it is the record's, copied).
_RAISED = re.compile(r"\braised ([A-Z]\w*)")
_HERE = re.compile(r"^here: (.*)", re.MULTILINE | re.DOTALL)


def _raised_elsewhere(output: str, record: dict[str, Any]) -> str:
    """Why not, where the certification saw the sampler raise one exception and the script
    finds another: it fails for a reason of its own (a package registered twice in a fork:
    ArrowKeyError, where the sampler raised IndexError). Empty where it names the same."""
    named = _RAISED.search(record["message"])
    if named is None:
        return ""
    found = _HERE.search(output)
    here = found.group(1) if found else ""
    if re.search(rf"\b{named.group(1)}\b", here):
        return ""
    return (
        f"the script exits 1, but not on {named.group(1)}, which the certification saw raised: "
        f"{(here.splitlines() or ['it printed no finding'])[0][:200]}"
    )


def _shown(path: str) -> str:
    """The path as a user types it: relative to the current folder where it lies under it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def attach(results: Sequence[InvariantResult], reproductions: dict[str, Reproduction]) -> None:
    """Each result's reproduction, as the certificate records it."""
    for result in results:
        if result.flag in reproductions:
            result.reproduction = asdict(reproductions[result.flag])
