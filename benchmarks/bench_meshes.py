"""Speed figures for device meshes (issue 34, docs/meshes.md).

Prints, in one run: the wall time of the default certification on meshes (the console
script's run, the `dev` profile, `--contract=BASE+mesh` with the default `--meshes`, in-process,
in real groups of 1, 2 and 4 and on the default meshes, dp2.tp2, tp2.dp2 and drawn4) of each subject's reference, against a 120 s
target on 2 cores, and the same certification without `+mesh`, so that the meshes' own share
shows.

Run from the repo root: python benchmarks/bench_meshes.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from sampler_conformance.subjects import SUBJECTS

REPO = Path(__file__).resolve().parents[1]
MESH_TARGET_S = 120.0


def certify(contract: str) -> tuple[float, str]:
    command = [sys.executable, "-m", "sampler_conformance.cli", f"--contract={contract}", "-q"]
    environment = {key: value for key, value in os.environ.items() if key != "CI"}  # the default profile, dev
    start = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800, env=environment)
    elapsed = time.perf_counter() - start
    verdict = next((line for line in result.stdout.splitlines() if line.startswith("VERDICT")), "no verdict")
    return elapsed, f"exit {result.returncode}: {verdict[:160]}"


def main() -> None:
    print(f"default certifications of each subject's reference on meshes, against {MESH_TARGET_S:.0f} s each:")
    for subject in SUBJECTS.values():
        base = next(iter(subject.contracts))  # the subject's first contract, whose reference is the default spec
        plain, _ = certify(base)
        meshed, verdict = certify(f"{base}+mesh")
        print(
            f"  {base}+mesh: {meshed:5.1f} s ({meshed / MESH_TARGET_S:.2f} of the target; {base} alone "
            f"{plain:5.1f} s, the meshes {meshed - plain:+.1f} s), {verdict}"
        )


if __name__ == "__main__":
    main()
