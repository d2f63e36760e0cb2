"""The console script: ``sampler-conformance SPEC [--contract NAME] [--certificate PATH] [pytest options]``.

It is the pytest run and nothing else: the same plugin over the same test folders, so the
summary, the certificate and the exit code are those of ``pytest --pyargs
sampler_conformance --sampler=SPEC`` (0 conforms, 1 does not conform, 4 usage error, 5
nothing was proven, ...; see docs/exit-codes.md).
"""

from __future__ import annotations

import atexit
import difflib
import os
import sys

from .pytest_plugin.folders import CERTIFICATION_DIRS

USAGE = """\
usage: sampler-conformance SPEC [--contract NAME] [--certificate PATH] [any pytest option]
       sampler-conformance --list-contracts

Without SPEC (first argument an option), the contract's reference is certified:
torch.utils.data.DistributedSampler for the default contract.

Certify the sampler SPEC (MODULE:ATTR or path/to/file.py:ATTR, a class or a factory
called as Attr(dataset, num_replicas=W, rank=r, shuffle=, seed=, drop_last=)), or with
--contract stream (or another stream contract) the streaming dataset whose factory SPEC is, called as
make(dataset_size, *, rank, world_size, seed=, shuffle=, ...) (docs/streaming-datasets.md).
Every option of the pytest plugin applies: --world-sizes, --rank-timeout, --backend,
--without, --hypothesis-profile=dev|ci|thorough, -k, -x, -n ...
Exit status: 0 conforms, 1 does not conform, 2 interrupted, 3 internal error,
4 usage error, 5 nothing was proven (no test ran, or every test was skipped).
"""


def pytest_arguments(spec: str | None, options: list[str]) -> list[str]:
    """The pytest command line the console script runs: the plugin asked for by name (the
    entry point stays inert), the certification's folders, rooted in the current directory
    (the cache and relative --certificate paths land there, never in site-packages). A test
    id pasted from the output (``test_lengths.py::test_equal_batch_counts[keep_last]``) runs
    that test alone, from the folder it lies in."""
    sampler = [f"--sampler={spec}"] if spec is not None else []
    options = [_located(option) or option for option in options]
    chosen = [option for option in options if any(option.startswith(str(d)) for d in CERTIFICATION_DIRS)]
    return [
        "-p",
        "sampler_conformance.plugin",
        f"--rootdir={os.getcwd()}",
        *([] if chosen else map(str, CERTIFICATION_DIRS)),
        *sampler,
        *options,
    ]


def _located(argument: str) -> str | None:
    """``test_file.py[::test...]`` as the path of the certification's own file of that name, or None."""
    name, sep, rest = argument.partition("::")
    if argument.startswith("-") or not name.endswith(".py") or os.sep in name:
        return None
    folder = next((d for d in CERTIFICATION_DIRS if (d / name).is_file()), None)
    return None if folder is None else f"{folder / name}{sep}{rest}"


def main(argv: list[str] | None = None) -> int:
    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else int(pytest.ExitCode.USAGE_ERROR)
    # A first argument that is an option (--list-contracts, --version): no sampler given.
    spec, options = (None, args) if args[0].startswith("-") else (args[0], args[1:])
    code = int(pytest.main(pytest_arguments(spec, options)))
    if code == pytest.ExitCode.USAGE_ERROR:
        for hint in misspelt(options):
            print(f"sampler-conformance: {hint}", file=sys.stderr)
    return code


# Options of other plugins a certification is run with, beside the suite's own.
HYPOTHESIS_OPTIONS = ("--hypothesis-profile", "--hypothesis-seed", "--hypothesis-show-statistics")


def misspelt(options: list[str]) -> list[str]:
    """A hint for each long option that is not one of the suite's but reads almost like one:
    ``--world-size is not an option; did you mean --world-sizes?`` (said after a usage error,
    which pytest's own message explains)."""
    from .pytest_plugin.options import OPTIONS

    known = [f"--{option.name}" for option in OPTIONS] + ["--list-contracts", *HYPOTHESIS_OPTIONS]
    hints = []
    for option in options:
        name = option.partition("=")[0]
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8) if name.startswith("--") else []
        if close and name not in known:
            hints.append(f"{name} is not an option; did you mean {close[0]}?")
    return hints


def run() -> None:
    """The console script (and ``python -m sampler_conformance.cli``)."""
    exit_without_finalising(main())


def exit_without_finalising(code: int) -> None:
    """Run the exit hooks, then exit without finalising the interpreter. Every process of
    the run is reaped and the certificate written by then; what is left is garbage-collecting
    torch, about 0.6 s of a certification's wall time on 2 cores, for nothing."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
