"""Every command and script in the docs runs where users run it (issue 53, item 5).

The README's and docs/'s ``bash`` and ``python`` blocks are read here, and each command is
declared once, below: either how it runs (exactly as written, from the installed package,
in an empty directory, with the exit code it gives and a few words of its output), or why
it cannot run here (GPUs, two nodes, a package the venv lacks, the set-up ``.ci/run``
itself does). A command in the docs that is not declared, or a declaration that is no
longer in the docs, fails the test that reads them, saying which.

The placeholders users copy (``mypkg.samplers:MySampler``, ``mypkg.data:make``,
``path/to/my_sampler.py``) are small modules of the user's code, conforming, each built on
a reference the package ships. Each command runs as written; the run is narrowed through
the environment (``PYTEST_ADDOPTS``: the in-process ranks, the quick profile and one test
per subject), so that the whole table costs seconds, not a certification each. A bash
block that begins ``#!`` is a script and runs whole (the CI gate of docs/exit-codes.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from .installed_venv import Venv, installed, shared_directory
from .suite_run import REPO

DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
# One test per subject, on simulated ranks, under the quick profile: what a command runs here.
NARROWED = (
    "--ranks=simulated --hypothesis-profile=quick --hypothesis-seed=0 "
    "-k 'per_epoch_invariant or test_stream_epoch or test_weighted_epoch or test_batch_epoch'"
)
RERUN = "PARTIAL: a rerun of -k"  # the verdict of a narrowed run that found nothing wrong

# The user's code the placeholders name, each module built on a reference the package ships.
USER_CODE = {
    "mypkg/__init__.py": "",
    "mypkg/samplers.py": '''
from torch.utils.data import DistributedSampler


class MySampler(DistributedSampler):
    """A user's sampler: DistributedSampler's contract, kept."""
''',
    "mypkg/data.py": '''
from sampler_conformance.adapters.torch_iterable import make as split, make_mix as mix


def make(dataset_size, *, rank, world_size, seed=0, shuffle=False, sources=None, weights=None):
    """A user's streaming dataset: a mix of sources where it is given them, else its rank's split."""
    if sources is not None:
        return mix(dataset_size, rank=rank, world_size=world_size, sources=sources, weights=weights, seed=seed)
    return split(dataset_size, rank=rank, world_size=world_size, seed=seed, shuffle=shuffle)
''',
    "mypkg/batches.py": """
from sampler_conformance.adapters.budget_batches import make, poisson as make_poisson
""",
    "mypkg/weighted.py": """
from sampler_conformance.adapters.torch_weighted import make
""",
}
# Files the commands name by path, relative to the directory they run in.
USER_FILES = {"path/to/my_sampler.py": USER_CODE["mypkg/samplers.py"]}


@dataclass(frozen=True)
class Runs:
    """A command that runs here: the exit code it gives, and words its output holds."""

    exit_code: int
    says: str


@dataclass(frozen=True)
class NotHere:
    """A command that cannot run here, and why (where it is run, if it is)."""

    why: str


CLONE = "a clone's command, run at the repository root: the selftests run that form throughout (suite_run.certify)"
TORCHRUN = "torchrun's entry point runs from the installed package in test_installed_package (2 ranks on 2 cores)"

COMMANDS: dict[str, Runs | NotHere] = {
    # README.md
    "pip install torch==2.13.0 . && sampler-conformance torch.utils.data.distributed:DistributedSampler": NotHere(
        ".ci/run installs the package this way and certifies the default sampler, on every submission"
    ),
    "pip install torch==2.13.0 -e '.[test]' && python -m pytest selftests -n 2": NotHere(
        "the development set-up and these very selftests: .ci/run runs them"
    ),
    "sampler-conformance mypkg.data:make --contract=stream": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream_exact": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream_padded": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream_truncated": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream_mix": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream+resumable": Runs(0, RERUN),
    "sampler-conformance mypkg.samplers:MySampler": Runs(0, RERUN),
    "sampler-conformance path/to/my_sampler.py:MySampler": Runs(0, RERUN),
    "pytest --pyargs sampler_conformance --sampler=mypkg.samplers:MySampler": Runs(0, RERUN),
    "torchrun --standalone --nproc-per-node=4 -m sampler_conformance.torchrun mypkg.samplers:MySampler": NotHere(
        TORCHRUN
    ),
    "python: from sampler_conformance import check_sampler, parametrize_with_checks": Runs(0, ""),
    # docs/batch-samplers.md
    "python: def make(lengths, *, num_replicas, rank, max_tokens, seed=0): ...  # --contract=dynamic_batches": NotHere(
        "factories' signatures, not a script"
    ),
    "sampler-conformance mypkg.batches:make --contract=dynamic_batches": Runs(0, RERUN),
    "sampler-conformance mypkg.batches:make_poisson --contract=poisson": Runs(0, RERUN),
    # docs/certify-your-sampler.md
    "python -m pytest --sampler=mypkg.samplers:MySampler": NotHere(CLONE),
    "CONFORMANCE_SAMPLER=mypkg.samplers:MySampler python -m pytest": NotHere(CLONE),
    "python: # my_factories.py": NotHere("needs mmengine, which the selftests' venv does not install"),
    "sampler-conformance my_factories.py:mmengine_default --contract=torch": NotHere(
        "needs mmengine, which the selftests' venv does not install"
    ),
    "sampler-conformance mypkg.samplers:MyBatchSampler --shard-with=accelerate --contract=batch": NotHere(
        "needs accelerate, which the selftests' venv does not install (test_adapters certifies through its wrapper)"
    ),
    # docs/contracts.md
    "sampler-conformance mypkg.samplers:MySampler "
    "--contract=valid,across_processes,finite_epochs,padded_epochs,strided,equal_batches": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=reads_through_workers,exactly_once+resumable": Runs(0, RERUN),
    # docs/development.md
    "pip install -e '.[lint]' && ruff check . && ruff format --check . && python tools/typecheck.py": NotHere(
        "the linters and the type checker of a clone: .ci/run runs them"
    ),
    # docs/exit-codes.md: the gate reads the certificate's state, and a narrowed run is partial
    "#!/usr/bin/env bash": Runs(1, "partial: not every invariant was checked"),
    # docs/meshes.md
    "sampler-conformance torch.utils.data.distributed:DistributedSampler --contract=torch+mesh": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream+mesh --meshes=dp2.tp2,pp2.dp2.tp2": Runs(0, RERUN),
    # docs/process-groups.md
    "sampler-conformance mypkg.samplers:MySampler --backend=nccl --world-sizes=8": Runs(0, RERUN),
    'python3 tools/gpu_check.py "$OUT/gpu_check"': NotHere("the GPU check, run on a lent GPU machine"),
    "python tools/gpu_check.py /tmp/gpu_check --dry-run": NotHere(
        "a tool of the repository; test_gpu_check runs its plan on CPU"
    ),
    "python tools/gpu_check.py /tmp/gpu_check --backend gloo": NotHere(
        "a tool of the repository; test_gpu_check runs its plan on CPU"
    ),
    "torchrun --nnodes=2 --nproc-per-node=8 --rdzv-id=JOB --rdzv-backend=c10d --rdzv-endpoint=HOST:PORT "
    "-m sampler_conformance.torchrun mypkg.samplers:MySampler --contract=torch "
    "--certificate=certificates/sampler": NotHere("two nodes of 8 GPUs"),
    # docs/resume-and-elastic.md
    "python: from sampler_conformance.adapters import fill_from_process_group": NotHere(
        "a factory's shape, around a library's sampler: selftests/corpus/fairchem.py is one, which test_resume "
        "certifies"
    ),
    # docs/streaming-datasets.md
    "pytest --pyargs sampler_conformance --contract=stream --sampler=mypkg.data:make": Runs(0, RERUN),
    "python: def make(dataset_size, *, rank, world_size, seed, shuffle, num_shards, shards, batch_size, workdir, "
    "sources, weights):": NotHere("a factory's signature, not a script"),
    # docs/weighted-samplers.md
    "sampler-conformance mypkg.weighted:make --contract=weighted": Runs(0, RERUN),
    "python: def make(weights, *, num_replicas, rank, num_samples, seed):": NotHere(
        "a factory's signature, not a script"
    ),
}


@dataclass(frozen=True)
class Command:
    key: str  # its line (a script's or a python block's: its first), as COMMANDS names it
    text: str  # what runs: the line, or the whole block
    shell: str  # bash or python
    where: str  # the doc it is in


def documented() -> list[Command]:
    """Every command of the docs' bash blocks (continuations joined, comments dropped), each
    script (a bash block that begins #!) and each python block, in the docs' order."""
    commands = []
    for doc in DOCS:
        for shell, body in re.findall(r"^```(bash|python)\n(.*?)^```", doc.read_text(), re.S | re.M):
            first = body.splitlines()[0]
            if shell == "python":
                commands.append(Command(f"python: {first}", body, shell, doc.name))
            elif first.startswith("#!"):
                commands.append(Command(first, body, shell, doc.name))
            else:
                for line in body.replace("\\\n", " ").splitlines():
                    line = re.sub(r"\s+", " ", line.split("  #")[0]).strip()
                    if line and not line.startswith("#"):
                        commands.append(Command(line, line, shell, doc.name))
    return commands


def _key(command: str) -> str:
    return re.sub(r"\s+", " ", command).strip()


def test_every_command_in_the_docs_is_declared_here():
    """So that a new command in the docs is run here, or says why it cannot be."""
    found = {_key(c.key): c.where for c in documented()}
    declared = {_key(key) for key in COMMANDS}
    undeclared = sorted(f"{where}: {key}" for key, where in found.items() if key not in declared)
    stale = sorted(key for key in declared if key not in found)
    assert not undeclared, "declare these in COMMANDS (how they run, or why they cannot):\n" + "\n".join(undeclared)
    assert not stale, "these are no longer in the docs; remove them from COMMANDS:\n" + "\n".join(stale)


RUNNABLE = {_key(c.key): c for c in documented() if isinstance(COMMANDS.get(_key(c.key)), Runs)}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    return installed(shared_directory(tmp_path_factory))


@pytest.mark.parametrize("key", list(RUNNABLE), ids=lambda key: key[:80])
def test_a_documented_command_runs_from_the_installed_package(venv, tmp_path, key):
    command, expected = RUNNABLE[key], COMMANDS[key]
    assert isinstance(expected, Runs)
    for path, text in {**USER_CODE, **USER_FILES}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    if command.shell == "python":
        (tmp_path / "snippet.py").write_text(command.text)
        argv = [venv.python, "snippet.py"]
    else:
        argv = ["bash", "-c", command.text]
    run = venv.run(*argv, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PYTEST_ADDOPTS": NARROWED})
    output = run.stdout + run.stderr
    assert run.returncode == expected.exit_code, f"{command.where}: {command.text}\n{output[-4000:]}"
    assert expected.says in output, f"{command.where}: {command.text}\n{output[-4000:]}"
