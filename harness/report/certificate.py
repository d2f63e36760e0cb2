"""The certificate: what was certified, under what, and the result for each invariant.

``--certificate=PATH`` writes PATH.json (validated by certificate.schema.json beside this
file) and PATH.md, a page to attach to a pull request. A failing run writes it too. What
it says of the sampler and of the draws is handed in by the plugin.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from sampler_conformance.core.contracts import Contract
from sampler_conformance.execution import hash_seeds

from .counterexamples import counterexample_text
from .results import FAILED, InvariantResult, Verdict, sizes_line

SCHEMA_PATH = Path(__file__).with_name("certificate.schema.json")
# 4: each invariant's measurements; 5: expected failures (--expect-failure), the sizes judged; 6: one rank's cost;
# 7: a failed invariant's reproduction script, where each counterexample was found (in_groups);
# 8: the cost's whole passes at the largest sizes drawn (passes, pass_s), which plan the draws;
# 9: an issue body beside each offered reproduction script (reproduction.issue)
SCHEMA_VERSION = 9


class Certified(Protocol):
    """What the certificate says of the thing certified (the index sampler's ``SamplerPlug``)."""

    @property
    def spec(self) -> str: ...
    @property
    def source_file(self) -> str | None: ...
    @property
    def missing(self) -> tuple[str, ...]: ...
    @property
    def is_factory(self) -> bool: ...


def suite_version() -> str:
    try:
        return importlib.metadata.version("sampler-conformance")
    except importlib.metadata.PackageNotFoundError:  # a clone that was never installed
        return "unknown"


def certificate_paths(path: str) -> tuple[Path, Path]:
    """PATH, PATH.json or PATH.md all name the pair PATH.json + PATH.md."""
    base = Path(path)
    if base.suffix in (".json", ".md"):
        base = base.with_suffix("")
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".md")


def build_certificate(
    *,
    plug: Certified,
    contract: Contract,
    results: list[InvariantResult],
    findings: list[str],
    verdict: Verdict,
    run: dict[str, Any],
    sizes: dict[str, dict[str, int]],
    cost: dict[str, Any],
) -> dict[str, Any]:
    import hypothesis
    import torch

    return {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "sampler": {
            "spec": plug.spec,
            "source_file": plug.source_file,
            "parameters_missing": contract.missing(plug.missing),
            "is_factory": plug.is_factory,
        },
        "environment": {
            "suite": suite_version(),
            "torch": torch.__version__,
            "hypothesis": hypothesis.__version__,
            "python": platform.python_version(),
            # A sampler that reads hash() of a str orders differently under each hash seed.
            "python_hash_seed": hash_seeds.describe(),
            "platform": platform.platform(),
        },
        "run": {**run, "examples": sum(r.examples for r in results), "command": sys.argv},
        "contract": {
            "name": contract.name,
            "family": contract.family,
            "description": contract.description,
            "flags": sorted(contract.flags),
            "turned_off": sorted(contract.turned_off),
            "expected_failures": dict(contract.expected_failures),
            "promises": [{"name": p.name, "flags": sorted(p.flags)} for p in contract.composed_of],
        },
        "verdict": {"state": verdict.state, "conforms": verdict.conforms, "summary": verdict.line},
        "sizes_judged": sizes,
        "cost": cost,
        "invariants": [asdict(r) for r in results],
        "findings": findings,
    }


def render_markdown(certificate: dict[str, Any], draws: str) -> str:
    """The page; ``draws`` says how the cases were drawn (``profiles.describe_draws``)."""
    sampler, run, contract = certificate["sampler"], certificate["run"], certificate["contract"]
    env = certificate["environment"]
    lines = [
        f"# Sampler conformance certificate: `{sampler['spec']}`",
        "",
        f"**{certificate['verdict']['summary']}**",
        "",
        f"- sampler: `{sampler['spec']}` ({sampler['source_file'] or 'source file unknown'})",
        f"- contract: `{contract['name']}` (family {contract['family']}): {contract['description']}",
        f"- composed of the promises: {', '.join(p['name'] for p in contract['promises'])}",
        f"- turned off: {', '.join(contract['turned_off']) or 'nothing'}",
        "- declared broken on purpose: "
        + ("; ".join(f"{flag} ({why})" for flag, why in contract["expected_failures"].items()) or "nothing"),
        f"- suite {env['suite']}, torch {env['torch']}, Hypothesis {env['hypothesis']}, Python {env['python']} "
        f"(PYTHONHASHSEED {env['python_hash_seed']}), {env['platform']}",
        f"- backend: {run.get('backend')}, world sizes: {run.get('world_sizes')}",
        f"- Hypothesis profile: {run.get('hypothesis_profile')}, {draws}, examples run: {run['examples']}",
        f"- command: `{' '.join(run['command'])}`",
        f"- created: {certificate['created']}, exit status: {run.get('exit_status')}",
        "",
        f"- an invariant is held only on at least {run['judged_floor']} judged cases",
        f"- {sizes_line(certificate['sizes_judged']) or 'sizes judged: none'}",
        *(f"- {line.strip()}" for line in certificate["cost"]["summary"]),
        "",
        "| invariant | status | judged cases | details |",
        "| --- | --- | --- | --- |",
    ]
    for invariant in certificate["invariants"]:
        shown = [counterexample_text(c) + f"\n(test: {c['test']})" for c in invariant["counterexamples"]]
        reproduction = invariant.get("reproduction")
        if reproduction:
            shown.insert(
                0,
                f"reproduce: `python {reproduction['script']}`"
                if reproduction["script"]
                else f"no reproduction script: {reproduction['why_not']}",
            )
        details = "<br>".join(_cell(d) for d in shown + invariant["details"]) or ""
        status = f"**{invariant['status']}**" if invariant["status"] == FAILED else invariant["status"]
        lines.append(f"| {invariant['title']} (`{invariant['flag']}`) | {status} | {invariant['judged']} | {details} |")
    if certificate["findings"]:
        lines += ["", "## Findings", ""] + [f"- {f}" for f in certificate["findings"]]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def write_certificate(path: str, certificate: dict[str, Any], draws: str) -> tuple[Path, Path]:
    json_path, md_path = certificate_paths(path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(certificate, indent=2) + "\n")
    md_path.write_text(render_markdown(certificate, draws))
    return json_path, md_path
