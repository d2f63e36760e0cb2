"""Every command and script in the docs runs where users run it (issue 53, item 5).

A user has the installed package, not this repository, so a command the docs show must
work from the wheel in an empty directory: ``python -m pytest --sampler=...`` there is
pytest's "unrecognized arguments" (exit 4). The README's and docs/'s ``bash`` and
``python`` blocks are read here, and each command is declared once, in ``COMMANDS``: how it
runs (exactly as written, from the installed package's venv, in an empty directory, with
the exit code it gives and words of its output); that another command run here has its
form, its contract and options aside (the contract checked to exist); or why it cannot run here (GPUs, two nodes, a
package the venv lacks, a command of a clone). A command in the docs that is not declared,
or a declaration no longer in the docs, fails the test that reads them, saying which.

The placeholders users copy (``mypkg.samplers:MySampler``, ``mypkg.data:make``,
``path/to/my_sampler.py``) are small modules of the user's code, each built on a
reference the package ships. A command runs as written, narrowed through the environment
(``PYTEST_ADDOPTS``: simulated ranks, the quick profile, one test per subject), so it
costs about 3 s, not a certification. A bash block that begins ``#!`` is a script and
runs whole: the CI gate of docs/exit-codes.md, once for each of its branches a narrowed
run can reach.
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from sampler_conformance.subjects import contract_named

from .installed_venv import Venv
from .suite_run import REPO

DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
# One test per subject, on simulated ranks, under the quick profile: what a command runs here.
ONE_TEST_PER_SUBJECT = (
    "test_per_epoch_invariant and valid_indices and keep_last or test_stream_epoch and item_ids"
    " or test_weighted_epoch and drawn_indices or test_batch_epoch and batch_items"
)
NARROWED = f"--ranks=simulated --hypothesis-profile=quick --hypothesis-seed=0 -k '{ONE_TEST_PER_SUBJECT}'"
RERUN = "PARTIAL: a rerun of -k"  # the verdict of a narrowed run that found nothing wrong

CONFORMING_SAMPLER = '''
from torch.utils.data import DistributedSampler


class MySampler(DistributedSampler):
    """A user's sampler: DistributedSampler's contract, kept."""
'''
# Floats for indices: fails valid_indices, the one index test a narrowed run has.
KNOWN_BAD_SAMPLER = "from corpus.known_bad import YieldsFloats as MySampler\n"

# The user's code the placeholders name, each module built on a reference the package ships.
USER_CODE = {
    "mypkg/__init__.py": "",
    "mypkg/data.py": "from sampler_conformance.adapters.torch_iterable import make\n",
    "mypkg/batches.py": "from sampler_conformance.adapters.budget_batches import make\n",
    "mypkg/weighted.py": "from sampler_conformance.adapters.torch_weighted import make\n",
}
SAMPLER_MODULES = ("mypkg/samplers.py", "path/to/my_sampler.py")  # where the docs name MySampler


@dataclass(frozen=True)
class Runs:
    """A command that runs here: the exit code it gives and words its output holds, with the
    user's MySampler as ``sampler`` (None: no such module, a spec that does not import) and
    ``options`` added to the narrowed run's."""

    exit_code: int
    says: str
    sampler: str | None = CONFORMING_SAMPLER
    options: str = ""


@dataclass(frozen=True)
class LikeCommand:
    """A command of the form of another that runs here: the same entry point and kind of
    spec, its contract and options aside. Its contract is checked to exist; the run is not
    repeated."""

    command: str


@dataclass(frozen=True)
class NotHere:
    """A command that cannot run here, and why (where it is run, if it is)."""

    why: str


CLONE = "a clone's command, run at the repository root: the selftests run that form throughout (suite_run.certify)"
STREAM = "sampler-conformance mypkg.data:make --contract=stream"
BATCHES = "sampler-conformance mypkg.batches:make --contract=dynamic_batches"
GATE = "#!/usr/bin/env bash"
# A reproduction script a failed certification wrote: test_known_bad runs each known-bad's, against it and
# against DistributedSampler.
REPRO_SCRIPT = "a script a failed certification wrote, run by selftests/test_known_bad.py for every index known-bad"

COMMANDS: dict[str, Runs | tuple[Runs, ...] | LikeCommand | NotHere] = {
    # README.md
    "pip install torch==2.13.0 . && sampler-conformance torch.utils.data.distributed:DistributedSampler": NotHere(
        ".ci/run installs the package this way and certifies the default sampler, on every submission"
    ),
    "pip install torch==2.13.0 -e '.[test]' && python -m pytest selftests -n 2": NotHere(
        "the development set-up and these very selftests: .ci/run runs them"
    ),
    STREAM: Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=stream_exact": LikeCommand(STREAM),
    "sampler-conformance mypkg.data:make --contract=stream_padded": LikeCommand(STREAM),
    "sampler-conformance mypkg.data:make --contract=stream_truncated": LikeCommand(STREAM),
    "sampler-conformance mypkg.data:make --contract=stream_mix": LikeCommand(STREAM),
    "sampler-conformance mypkg.data:make --contract=stream+resumable": LikeCommand(STREAM),
    "sampler-conformance mypkg.samplers:MySampler": LikeCommand(GATE),
    "sampler-conformance path/to/my_sampler.py:MySampler": Runs(0, RERUN),
    "pytest --pyargs sampler_conformance --sampler=mypkg.samplers:MySampler": Runs(0, RERUN),
    "torchrun --standalone --nproc-per-node=4 -m sampler_conformance.torchrun mypkg.samplers:MySampler": NotHere(
        "4 ranks on 2 shared cores: test_installed_package runs this entry point from the wheel on 2"
    ),
    # It prints nothing: that check_sampler returns, in a script run from the wheel, is what it shows.
    "python: from sampler_conformance import check_sampler, parametrize_with_checks": Runs(0, ""),
    # docs/batch-samplers.md
    "python: def make(lengths, *, num_replicas, rank, max_tokens, seed=0): ...  # --contract=dynamic_batches": NotHere(
        "factories' signatures, not a script"
    ),
    BATCHES: Runs(0, RERUN),
    "sampler-conformance mypkg.batches:make_poisson --contract=poisson": LikeCommand(BATCHES),
    # docs/certify-your-sampler.md
    "python -m pytest --sampler=mypkg.samplers:MySampler": NotHere(CLONE),
    "CONFORMANCE_SAMPLER=mypkg.samplers:MySampler python -m pytest": NotHere(CLONE),
    "python: # my_factories.py": NotHere("needs mmengine, which the selftests' venv does not install"),
    "sampler-conformance my_factories.py:mmengine_default --contract=torch": NotHere(
        "needs mmengine, which the selftests' venv does not install"
    ),
    "sampler-conformance mypkg.samplers:MySampler --contract=torch --certificate=certificates/my_sampler": LikeCommand(
        GATE
    ),
    "python: from sampler_conformance import parametrize_with_checks": NotHere(
        "a test file of the user's suite: test_installed_package runs examples/test_my_sampler.py, the whole file, "
        "through pytest from the wheel"
    ),
    "sampler-conformance mypkg.samplers:MyBatchSampler --shard-with=accelerate --contract=batch": NotHere(
        "needs accelerate, which the selftests' venv does not install (test_adapters certifies through its wrapper)"
    ),
    # docs/contracts.md
    "sampler-conformance mypkg.samplers:MySampler "
    "--contract=valid,across_processes,finite_epochs,padded_epochs,strided,equal_batches": Runs(0, RERUN),
    "sampler-conformance mypkg.data:make --contract=reads_through_workers,exactly_once+resumable": LikeCommand(STREAM),
    # docs/development.md
    "pip install -e '.[lint]' && ruff check . && ruff format --check . && python tools/typecheck.py": NotHere(
        "the linters and the type checker of a clone: .ci/run runs them"
    ),
    # docs/exit-codes.md: the CI gate, through each branch a narrowed run reaches
    GATE: (
        Runs(1, "partial: not every invariant was checked"),  # the run exits 0, but is a rerun of -k
        Runs(1, "does not conform: see certificates/sampler.md", sampler=KNOWN_BAD_SAMPLER),
        Runs(1, "misdeclared: an invariant declared broken held", options="--expect-failure=valid_indices:it-holds"),
        Runs(4, "usage error: fix the command line", sampler=None),
    ),
    # docs/meshes.md
    # Narrowed to simulated ranks, a run on meshes runs none: its form is its base's.
    "sampler-conformance torch.utils.data.distributed:DistributedSampler --contract=torch+mesh": LikeCommand(GATE),
    "sampler-conformance mypkg.data:make --contract=stream+mesh --meshes=dp2.tp2,pp2.dp2.tp2": LikeCommand(STREAM),
    # docs/scale.md: the cost probe and +scalable run in selftests/test_scale.py
    "sampler-conformance mypkg.samplers:MySampler --production-size=3.5e9 --production-world=1024": LikeCommand(GATE),
    "sampler-conformance mypkg.samplers:MySampler --scale --production-size=3.5e9": LikeCommand(GATE),
    "sampler-conformance sampler_conformance.adapters.lazy_permutation:LazyDistributedSampler "
    "--contract=torch+scalable": LikeCommand(GATE),
    # docs/process-groups.md
    "sampler-conformance mypkg.samplers:MySampler --backend=nccl --world-sizes=8": NotHere(
        "needs 8 GPUs (here its group tests skip for want of them); tools/gpu_check.py certifies over NCCL"
    ),
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
    # docs/reproductions.md: selftests/test_known_bad.py runs every index known-bad's scripts
    "python certificates/my_sampler.repros/pads_from_head.py": NotHere(REPRO_SCRIPT),
    "python certificates/my_sampler.repros/pads_from_head.py torch.utils.data.distributed:DistributedSampler": NotHere(
        REPRO_SCRIPT
    ),
    'python: """Reproduces [padding from the head] (pads_from_head) of selftests.corpus.known_bad:PadsFromTail': NotHere(
        REPRO_SCRIPT
    ),
    # docs/resume-and-elastic.md
    "python: from sampler_conformance.adapters import fill_from_process_group": NotHere(
        "a factory's shape, around a library's sampler: selftests/corpus/fairchem.py is one, which test_resume "
        "certifies"
    ),
    # docs/data-loaders.md
    "sampler-conformance mypkg.loaders:make --contract=data_loader+elastic+resumable": LikeCommand(STREAM),
    "pytest --sampler=sampler_conformance.adapters.torch_loader:make --contract=data_loader+resumable": NotHere(CLONE),
    "pytest --sampler=sampler_conformance.adapters.torch_loader:make --contract=data_loader+elastic+resumable": NotHere(
        CLONE
    ),
    "python: def make(dataset_size, *, dp_rank, dp_world_size, global_batch_size, seed, num_workers, workdir):": NotHere(
        "a factory's signature, not a script"
    ),
    # docs/streaming-datasets.md
    "pytest --pyargs sampler_conformance --contract=stream --sampler=mypkg.data:make": LikeCommand(
        "pytest --pyargs sampler_conformance --sampler=mypkg.samplers:MySampler"  # and mypkg.data:make runs above
    ),
    "python: def make(dataset_size, *, rank, world_size, seed, shuffle, num_shards, shards, batch_size, workdir, "
    "sources, weights):": NotHere("a factory's signature, not a script"),
    # docs/weighted-samplers.md
    "sampler-conformance mypkg.weighted:make --contract=weighted": Runs(0, RERUN),
    "python: def make(weights, *, num_replicas, rank, num_samples, seed):": NotHere(
        "a factory's signature, not a script"
    ),
}

# A fenced block, also inside a list item (indented as its fence is).
FENCED_BLOCK = re.compile(r"^( *)```(bash|python)\n(.*?)^\1```", re.S | re.M)


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
        for _, shell, indented in FENCED_BLOCK.findall(doc.read_text()):
            body = textwrap.dedent(indented)
            first = body.splitlines()[0]
            if shell == "python":
                commands.append(Command(f"python: {first}", body, shell, doc.name))
            elif first.startswith("#!"):
                commands.append(Command(first, body, shell, doc.name))
            else:
                commands += [Command(line, line, shell, doc.name) for line in _command_lines(body)]
    return commands


def _command_lines(body: str) -> list[str]:
    lines = (_without_comment(line) for line in body.replace("\\\n", " ").splitlines())
    return [line for line in lines if line]


def _without_comment(line: str) -> str:
    if line.lstrip().startswith("#"):
        return ""
    return _key(line.split("  #")[0])  # the docs set a comment off by two spaces; a # in an argument has one


def _key(command: str) -> str:
    return re.sub(r"\s+", " ", command).strip()


def _runs(declared: Runs | tuple[Runs, ...] | LikeCommand | NotHere | None) -> tuple[Runs, ...]:
    """The runs a declaration asks for: none for a command not run here."""
    if isinstance(declared, Runs):
        return (declared,)
    return declared if isinstance(declared, tuple) else ()


def _contracts(command: str) -> list[str]:
    return re.findall(r"--contract=(\S+)", command)


def test_every_command_in_the_docs_is_declared_here():
    """So that a new command in the docs is run here, or says why it cannot be."""
    found = {_key(c.key): c.where for c in documented()}
    declared = {_key(key) for key in COMMANDS}
    undeclared = sorted(f"{where}: {key}" for key, where in found.items() if key not in declared)
    stale = sorted(key for key in declared if key not in found)
    assert not undeclared, "declare these in COMMANDS (how they run, or why they cannot):\n" + "\n".join(undeclared)
    assert not stale, "these are no longer in the docs; remove them from COMMANDS:\n" + "\n".join(stale)


LIKE_ANOTHER = {key: declared.command for key, declared in COMMANDS.items() if isinstance(declared, LikeCommand)}


@pytest.mark.parametrize("key", list(LIKE_ANOTHER))
def test_a_command_like_another_names_a_contract_of_the_suite(key: str):
    """Its form runs here in the other command; what differs, the contract, must exist."""
    assert _runs(COMMANDS[LIKE_ANOTHER[key]]), f"{LIKE_ANOTHER[key]} is not run here"
    for contract in _contracts(key):
        contract_named(contract)  # raises, saying why, for a contract the suite does not know


RUNNABLE = {_key(c.key): c for c in documented() if _runs(COMMANDS.get(_key(c.key)))}
RUNS = [(key, n) for key in RUNNABLE for n in range(len(_runs(COMMANDS[key])))]


@pytest.mark.parametrize(("key", "n"), RUNS, ids=[f"{key[:70]}-{n}" for key, n in RUNS])
def test_a_documented_command_runs_from_the_installed_package(venv: Venv, tmp_path: Path, key: str, n: int):
    command, expected = RUNNABLE[key], _runs(COMMANDS[key])[n]
    _write_user_code(tmp_path, expected.sampler)
    if command.shell == "python":
        (tmp_path / "snippet.py").write_text(command.text)
        argv = [venv.python, "snippet.py"]
    elif command.key.startswith("#!"):
        (tmp_path / "script.sh").write_text(command.text)
        argv = ["bash", "script.sh"]
    else:
        argv = ["bash", "-c", command.text]
    user_path = os.pathsep.join([str(tmp_path), str(venv.user_code)])  # venv.user_code: the corpus
    addopts = f"{NARROWED} {expected.options}"
    run = venv.run(*argv, cwd=tmp_path, env={"PYTHONPATH": user_path, "PYTEST_ADDOPTS": addopts})
    output = run.stdout + run.stderr
    assert run.returncode == expected.exit_code, f"{command.where}: {command.text}\n{output[-4000:]}"
    assert expected.says in output, f"{command.where}: {command.text}\n{output[-4000:]}"


def _write_user_code(folder: Path, sampler: str | None) -> None:
    samplers = dict.fromkeys(SAMPLER_MODULES, sampler) if sampler is not None else {}
    for path, text in {**USER_CODE, **samplers}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
