"""Certify real samplers from PyPI and write the verdict table.

    python tools/verdict_table.py [--timeout SECONDS] [--venv DIR] [--only TEXT] [--output PATH]

Creates a throwaway virtual environment, installs torch==2.13.0 first (a CPU build on
this machine's disk; pinning it on every later pip call keeps pip from swapping it for a
download of gigabytes), then this repo (-e, with its test extra, which pins the Hypothesis
version: a seed gives the same draws only within one) and each sampler package. Every sampler is
certified by the whole suite (in-process properties and real process groups) under the
contract it claims:

    python -m pytest -p no:cacheprovider --hypothesis-profile=dev \\
        --sampler=SPEC --contract=NAME --certificate=...

Each failed invariant's reproduction script (docs/reproductions.md), where the run offers one,
is kept under docs/repros/ROW/ with its issue body, and linked from the row's cell. The JSON
certificates become a Markdown table, written between the markers below in
docs/real-samplers.md (the prose around them is left alone), and also on its own to
--output PATH when given. --only certifies some rows: its partial table goes to --output
alone, so the doc's table stays whole. A package that cannot be installed here gets a row
saying so, with the last line of pip's error. A row the catalogue marks ``alone`` (what another row
installs breaks its import) gets a virtual environment of its own beside the shared one.

--scale certifies the rows the catalogue lists AT_SCALE (or those of --only among them) again,
on simulated ranks, with ``--scale --production-size=1e9 --production-world=1024``: one rank's
cost measured and projected there, and the invariants judged at the numeric edges
(docs/scale.md). Their table goes between the scale markers of docs/real-samplers.md.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parents[1]
TORCH_REQUIREMENT = "torch==2.13.0"
HYPOTHESIS_PROFILE = "dev"
HYPOTHESIS_SEED = "0"  # the same draws on every run: the table changes only when a sampler does
DOC = REPO / "docs" / "real-samplers.md"  # the table lives between these markers there
REPROS = REPO / "docs" / "repros"  # each row's reproduction scripts (and issue bodies), a folder per row
TABLE_START, TABLE_END = "<!-- verdicts:start -->", "<!-- verdicts:end -->"
SCALE_START, SCALE_END = "<!-- scale:start -->", "<!-- scale:end -->"
PRODUCTION = (1e9, 1024)  # where --scale projects each row's cost
SCALE_OPTIONS = (
    "--scale",
    f"--production-size={PRODUCTION[0]:g}",
    f"--production-world={PRODUCTION[1]}",
    "--ranks=simulated",
)
INSTALL_TIMEOUT_S = 900
MESSAGE_CHARS = 240  # of a counterexample's message; the case it failed on is always shown whole
STATUS_ORDER = ("held", "failed", "not judged", "not applicable", "turned off", "not run", "error")


# The real samplers certified, each with the contract it claims: declared once, in the package's
# adapters, read from its folder as a bare package (this tool runs before the package is
# installed anywhere; its __init__, which imports the package, is not run: the catalogue's
# modules are plain data).
_adapters = types.ModuleType("real_samplers")
_adapters.__path__ = [str(REPO / "adapters")]
sys.modules[_adapters.__name__] = _adapters
catalogue = importlib.import_module(f"{_adapters.__name__}.catalogue")
if TYPE_CHECKING:
    from sampler_conformance.adapters.catalogue import RealSampler as Row
else:
    Row = catalogue.RealSampler
ROWS: tuple[Row, ...] = tuple(record for record in catalogue.REAL_SAMPLERS if not record.not_in_table)
SCALE_ROWS: tuple[Row, ...] = tuple(row for row in ROWS if (row.spec, row.contract) in catalogue.AT_SCALE)


@dataclass
class Outcome:
    row: Row
    package: str
    verdict: str
    failures: list[str]
    certificate: dict | None = None


def progress(text: str) -> None:
    print(f"[verdict_table] {text}", file=sys.stderr, flush=True)


def last_line(text: str) -> str:
    """The line of pip's (or pytest's) output that says what went wrong."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:") and "for help visit" not in line]
    return (errors or lines or ["(no output)"])[-1]


class Environment:
    """The throwaway virtual environment and what was installed into it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.python = directory / "bin" / "python"
        self.install_errors: dict[str, str | None] = {}  # requirement -> None when installed

    def create(self) -> None:
        if not self.python.exists():
            progress(f"creating a virtual environment in {self.directory}")
            venv.EnvBuilder(with_pip=True).create(self.directory)
        self._pip_install(TORCH_REQUIREMENT, what=TORCH_REQUIREMENT, required=True)
        # The test extra pins Hypothesis: a seed gives the same draws only within one version.
        self._pip_install("-e", f"{REPO}[test]", what="this repo with its test extra", required=True)

    def install(self, requirement: str) -> str | None:
        """Install once; None when installed, else why not."""
        if requirement not in self.install_errors:
            self.install_errors[requirement] = self._pip_install(*requirement.split(), what=requirement)
        return self.install_errors[requirement]

    def _pip_install(self, *arguments: str, what: str, required: bool = False) -> str | None:
        progress(f"pip install {what}")
        command = [
            str(self.python),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            TORCH_REQUIREMENT,
            *arguments,
        ]
        error: str | None
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            error = f"pip install {what} did not finish within {INSTALL_TIMEOUT_S} s"
        else:
            error = None if done.returncode == 0 else last_line(done.stdout + "\n" + done.stderr)
        if error and required:
            raise SystemExit(f"verdict_table: cannot set up the environment: pip install {what}: {error}")
        if error:
            progress(f"  not installable here: {error}")
        return error

    def version(self, distribution: str) -> str:
        done = subprocess.run(
            [
                str(self.python),
                "-c",
                "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))",
                distribution,
            ],
            capture_output=True,
            text=True,
        )
        return done.stdout.strip() if done.returncode == 0 else "version unknown"


def environment_of(row: Row, shared: Environment) -> Environment:
    """The shared environment, or for a row certified alone (``RealSampler.alone``) one of its own beside it."""
    if not row.alone:
        return shared
    progress(f"{row.sampler}: in an environment of its own: {row.alone}")
    own = Environment(shared.directory.with_name(f"{shared.directory.name}-{re.sub(r'[^A-Za-z0-9]+', '_', row.spec)}"))
    own.create()
    return own


def certify(environment: Environment, row: Row, workdir: Path, timeout_s: float, more: tuple[str, ...] = ()) -> Outcome:
    package = row.origin
    if row.requirement is not None:
        error = environment.install(row.requirement)
        if error is not None:
            return Outcome(row, row.requirement, "not installable here", [f"pip: {error}"])
    if row.version_of is not None:
        package = f"{row.version_of} {environment.version(row.version_of)}"
    slug = re.sub(r"[^A-Za-z0-9]+", "_", " ".join([row.spec, row.contract, *row.options, *more])).strip("_")
    certificate = workdir / slug
    scripts = REPROS / slug  # the row's reproduction scripts, kept in the docs and linked from its cell
    shutil.rmtree(scripts, ignore_errors=True)  # an earlier run's, of failures that may be gone
    command = [
        str(environment.python),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--hypothesis-profile={HYPOTHESIS_PROFILE}",
        f"--hypothesis-seed={HYPOTHESIS_SEED}",
        f"--sampler={row.spec}",
        f"--contract={row.contract}",
        *row.options,
        *more,
        f"--certificate={certificate}",
        f"--repro-dir={scripts}",
    ]
    progress(f"certifying {row.spec} under contract {row.contract!r} ({package})")
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=REPO, env=suite_environment(workdir), capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        outcome = Outcome(row, package, f"no verdict: the run did not finish within {timeout_s:g} s", [])
    else:
        json_path = certificate.with_name(certificate.name + ".json")
        if json_path.exists():
            outcome = read_certificate(row, package, json.loads(json_path.read_text()))
        else:
            why = last_line(done.stdout + "\n" + done.stderr)
            outcome = Outcome(row, package, f"no verdict: pytest exit {done.returncode}: {why}", [])
    progress(f"  {outcome.verdict} ({time.monotonic() - started:.0f} s)")
    return outcome


def suite_environment(workdir: Path) -> dict[str, str]:
    """This process's environment without the suite's own settings, and a fresh
    Hypothesis database, so earlier runs' failures are not replayed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONFORMANCE_", "HYPOTHESIS_", "PYTEST_"))}
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(workdir / "hypothesis")
    return env


def read_certificate(row: Row, package: str, certificate: dict) -> Outcome:
    statuses = [i["status"] for i in certificate["invariants"] if i["status"] != "not promised"]
    statuses = [s for s in statuses if s != "not run" or "--ranks=simulated" not in certificate["run"]["command"]]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in STATUS_ORDER if statuses.count(s) or s in ("held", "failed"))
    state = certificate["verdict"]["state"]
    verdict = f"**{state}** ({counts})" if state == "does not conform" else f"{state} ({counts})"
    flags_by_counterexample: dict[str, list[str]] = {}  # one line for invariants broken by the same case
    for invariant in certificate["invariants"]:
        if invariant["status"] == "failed":
            flags_by_counterexample.setdefault(counterexample(invariant["counterexamples"]), []).append(
                invariant["flag"]
            )
    scripts = {  # each failed invariant's reproduction script, where the run offered one
        i["flag"]: Path(i["reproduction"]["script"]).relative_to(DOC.parent).as_posix()
        for i in certificate["invariants"]
        if i["status"] == "failed" and (i.get("reproduction") or {}).get("script")
    }
    failures = [
        ", ".join(f"`{flag}`" + (f" ([script]({scripts[flag]}))" if flag in scripts else "") for flag in flags)
        + f": {text}"
        for text, flags in flags_by_counterexample.items()
    ]
    return Outcome(row, package, verdict, failures, certificate)


def counterexample(records: list[dict]) -> str:
    """The first counterexample's message, shortened, with the case it failed on."""
    if not records:
        return "(no counterexample recorded)"
    first = records[0]
    text = f"[{first['title']}] {first['message']}"
    if len(text) > MESSAGE_CHARS:
        text = text[: MESSAGE_CHARS - 3] + "..."
    return text + (f" (case: {first['case']})" if first["case"] else "")


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def render_table(outcomes: list[Outcome], environment: Environment) -> str:
    created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [
        f"Generated by `python tools/verdict_table.py` on {created}: torch {environment.version('torch')}, "
        f"Python {platform.python_version()}, Hypothesis {environment.version('hypothesis')} with profile "
        f"`{HYPOTHESIS_PROFILE}` and seed {HYPOTHESIS_SEED}, "
        "the whole suite (`python -m pytest`: in-process properties and real gloo groups of 1, 2 and 4 ranks). Each "
        "sampler is certified under the contract it claims (`python -m pytest --list-contracts`); the verdict is the "
        "run's state, with the count of invariants in each status, and a failed invariant shows its first "
        "counterexample.",
        "",
        "| sampler | package | contract | verdict | failed invariants: first counterexample |",
        "| --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        failures = "<br>".join(cell(f) for f in o.failures)
        lines.append(
            f"| {cell(o.row.sampler)}<br>`{o.row.spec}` | {cell(o.package)} | {contract_cell(o.row)} | "
            f"{o.verdict} | {failures} |"
        )
    return "\n".join(lines) + "\n"


def render_scale_table(outcomes: list[Outcome], environment: Environment) -> str:
    """The rows at scale: each one's verdict with --scale on simulated ranks (what only real groups
    check is not run there, and not counted), how far the numeric edges were judged, and its
    cost per rank, measured and projected."""
    created = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    size, world = PRODUCTION
    lines = [
        f"Generated by `python tools/verdict_table.py --scale` on {created}: torch {environment.version('torch')}, "
        f"profile `{HYPOTHESIS_PROFILE}`, seed {HYPOTHESIS_SEED}, simulated ranks, `{' '.join(SCALE_OPTIONS)}`.",
        "",
        f"| sampler | contract | verdict with --scale | numeric edges | cost per rank, measured | "
        f"projected at N={size:.0e}, W={world:,} |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        certificate = o.certificate or {}
        cost = certificate.get("cost") or {}
        measured = [line.strip() for line in cost.get("summary", []) if not line.startswith("projected")]
        projected = [line for line in cost.get("summary", []) if line.startswith("projected")]
        lines.append(
            f"| {cell(o.row.sampler)}<br>`{o.row.spec}` | {contract_cell(o.row)} | {o.verdict}"
            f"{'<br>' + '<br>'.join(cell(f) for f in o.failures) if o.failures else ''} | "
            f"{cell(edges_cell(certificate))} | {'<br>'.join(cell(m) for m in measured) or cost.get('not_measured', '')} | "
            f"{cell(projected[0].split(': ', 1)[1]) if projected else ''} |"
        )
    return "\n".join(lines) + "\n"


def edges_cell(certificate: dict) -> str:
    """How far the edges were judged: the largest N of the simulated ranks' cases, and why larger ones were not."""
    if not certificate:
        return ""
    judged = certificate["sizes_judged"]["simulated"].get("dataset_size")
    reasons = sorted(
        {
            detail.split(": ", 3)[-1]
            for invariant in certificate["invariants"]
            for detail in invariant["details"]
            if "numeric_edge" in detail and "not judged at N=" in detail
        }
    )
    return f"judged up to N={judged:,}" + "".join(f"; {reason}" for reason in reasons)


def contract_cell(row: Row) -> str:
    """`batch+mesh`, and the options its certification was given: `batch+mesh`<br>`--meshes=...`."""
    return "<br>".join(f"`{cell(part)}`" for part in (row.contract, *row.options))


def doc_has_markers(start: str = TABLE_START, end: str = TABLE_END) -> bool:
    text = DOC.read_text() if DOC.exists() else ""
    return start in text and end in text


def write_outputs(
    table: str, output: Path | None, update_doc: bool, markers: tuple[str, str] = (TABLE_START, TABLE_END)
) -> None:
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("# Verdicts for real samplers\n\n<!-- generated: do not edit by hand -->\n\n" + table)
        progress(f"wrote {output}")
    if update_doc:
        start, end = markers
        head, rest = DOC.read_text().split(start, 1)
        _, tail = rest.split(end, 1)
        DOC.write_text(f"{head}{start}\n{table}{end}{tail}")
        progress(f"updated the table between the markers {start} ... {end} in {DOC}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds one sampler's certification may take (default %(default)s)",
    )
    parser.add_argument("--venv", type=Path, help="use (and keep) this virtual environment instead of a throwaway one")
    parser.add_argument("--only", help="certify only the rows whose sampler or spec contains this text")
    parser.add_argument(
        "--output",
        type=Path,
        help="also write the table on its own to this Markdown file (required with --only, which leaves "
        f"{DOC.relative_to(REPO)} alone)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="certify the catalogue's AT_SCALE rows with --scale and a projection to N=1e9 on 1,024 ranks, "
        "and write their table between the scale markers",
    )
    arguments = parser.parse_args(argv)
    candidates = SCALE_ROWS if arguments.scale else ROWS
    rows = [r for r in candidates if not arguments.only or arguments.only in r.sampler or arguments.only in r.spec]
    markers = (SCALE_START, SCALE_END) if arguments.scale else (TABLE_START, TABLE_END)
    if not rows:
        parser.error(f"--only={arguments.only!r} matches no row")
    if arguments.only and arguments.output is None:
        parser.error(f"--only writes a partial table: give --output, so {DOC.relative_to(REPO)} stays whole")
    if not arguments.only and not doc_has_markers(*markers):
        parser.error(f"{DOC.relative_to(REPO)} has no {markers[0]} ... {markers[1]} markers to write the table between")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="verdict_table_") as scratch:
        environment = Environment(arguments.venv or Path(scratch) / "venv")
        environment.create()
        more = SCALE_OPTIONS if arguments.scale else ()
        outcomes = [
            certify(environment_of(row, environment), row, Path(scratch), arguments.timeout, more) for row in rows
        ]
        table = (render_scale_table if arguments.scale else render_table)(outcomes, environment)
    write_outputs(table, arguments.output, update_doc=not arguments.only, markers=markers)
    print(table)
    progress(f"done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
