"""The default certification's time and the evidence behind its verdict (issue 17).

Prints, measured in one run:
1. the wall and CPU time (the whole machine's) of the default certification of torch's DistributedSampler, as a
   user runs it (the console script, from an empty directory, no CI variable, no options),
   against a 15 s target, and under the `ci` profile against 30 s;
2. for each, the judged cases of every invariant, the fewest of them, and the floor a held
   needs;
3. with --selftests, the time of `python -m pytest selftests -n 2` (the README's command)
   against an 8 minute target.

Run from the repo root with the package installed: python benchmarks/bench_evidence.py [--selftests]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = "torch.utils.data.distributed:DistributedSampler"
TARGETS_S = {"dev": 15.0, "ci": 30.0}
SELFTESTS_TARGET_S = 8 * 60.0


def _machine_cpu_s() -> float:
    """CPU time the whole machine has spent busy, from /proc/stat. Most of a run's processes
    are not this script's children (they fork from fork servers and are reaped by them), so
    only the machine's count sees them all; on an idle machine it is the run's CPU."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    cpu_before, start = _machine_cpu_s(), time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - start, _machine_cpu_s() - cpu_before, result


def certify(profile: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("CONFORMANCE_")}
    with tempfile.TemporaryDirectory(prefix="bench-evidence-") as directory:
        command = ["sampler-conformance", DEFAULT_SPEC, f"--certificate={directory}/certificate"]
        if profile is not None:
            command.append(f"--hypothesis-profile={profile}")
        wall, cpu, result = _timed(command, Path(directory), env)
        certificate_path = Path(directory) / "certificate.json"
        if not certificate_path.exists():
            sys.exit(f"{' '.join(command)} wrote no certificate (exit {result.returncode}):\n{result.stdout[-3000:]}")
        certificate = json.loads(certificate_path.read_text())
    shown = certificate["run"]["hypothesis_profile"]
    target = TARGETS_S[shown]
    print(f"{' '.join(command[:2])}{' --hypothesis-profile=' + profile if profile else ''}:")
    print(f"  {certificate['verdict']['summary']}")
    print(
        f"  wall {wall:.1f} s ({'within' if wall <= target else 'OVER'} the {target:.0f} s target), "
        f"CPU {cpu:.1f} s, profile {shown}"
    )
    promised = [i for i in certificate["invariants"] if i["status"] != "not promised"]
    judged = {i["flag"]: i["judged"] for i in promised}
    fewest = min(judged, key=judged.__getitem__)
    print(
        f"  judged cases per invariant (floor {certificate['run']['judged_floor']}; fewest: {fewest}, "
        f"{judged[fewest]}): " + ", ".join(f"{flag} {count}" for flag, count in judged.items())
    )


def selftests() -> None:
    wall, cpu, result = _timed(
        [
            sys.executable,
            "-m",
            "pytest",
            "selftests",
            "-n",
            "2",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfE",
        ],
        REPO,
        dict(os.environ),
    )
    lines = result.stdout.strip().splitlines() or ["(no output)"]
    verdict = "within" if wall <= SELFTESTS_TARGET_S else "OVER"
    print(f"selftests (-n 2): {lines[-1]}")
    for line in lines:
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"  {line}")
    print(f"  wall {wall:.0f} s ({verdict} the {SELFTESTS_TARGET_S:.0f} s target), CPU {cpu:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--selftests", action="store_true", help="also time the selftests (minutes)")
    args = parser.parse_args()
    certify(None)
    certify("ci")
    if args.selftests:
        selftests()


if __name__ == "__main__":
    main()
