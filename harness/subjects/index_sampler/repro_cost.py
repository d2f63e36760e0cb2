"""The reproduction script of ``cost_follows_share`` (``+scalable``, docs/scale.md): not a reading
of ranks but the measurement the suite's cost probe makes (``execution/cost.py``), in plain
Python. Rank 0 of N / SHARE ranks is built over range(N), set to epoch 0 and read to its first
index, in a child process of its own, at the smallest N the probe measured at a fixed share and
at the largest; the child reports its peak resident memory above what it held before the build
(Linux's VmHWM, reset through /proc/self/clear_refs) and the seconds to the first index. The
promise is the check's (``cost_checks``, ``Cost.grows_with_n``), with its thresholds written in.

Two runs of a script must print the same (report/reproductions.py), and measured figures move
from run to run: the script prints, for each size, which of the suite's bars the figures pass,
not the figures themselves (a comment says how to see them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sampler_conformance.core.cost import (
    GROWTH_CHARGED,
    MEMORY_CHARGED,
    MEMORY_FLOOR,
    SHARE,
    SIZES,
    TIME_CHARGED_S,
    TIME_FLOOR_S,
)
from sampler_conformance.core.subject import CannotReproduce
from sampler_conformance.subjects.common.repro_script import LOAD, docstring, imports, script_spec, tail

from .case import IndexCase
from .contracts import SamplerContract
from .plug import SamplerPlug
from .repro_snippets import Snippet

COST = Snippet(
    "at a fixed share of indices per rank, rank 0's peak memory and time to its first index do not grow with N: "
    "neither grows tenfold from the smallest N to the largest and past the suite's bar.",
    """grew = [f"{what} grew more than {GROWTH}x from N={SIZES[0]:,} to N={SIZES[-1]:,} and passed {bar_said}"
        for what, a, b, floor, bar, bar_said in (
            ("peak memory", figures[0][0], figures[-1][0], MEMORY_FLOOR, MEMORY, f"{MEMORY >> 20} MB"),
            ("the time to the first index", figures[0][1], figures[-1][1], SECONDS_FLOOR, SECONDS, f"{SECONDS} s"))
        if b > bar and b > GROWTH * max(a, floor)]
broken = bool(grew)
shown = "; ".join(grew)""",
)
COST_SNIPPETS = {"cost_follows_share": COST}

SCRIPT = """{docstring}

{imports}

SPEC = sys.argv[1] if len(sys.argv) > 1 else {spec!r}  # or another sampler, to compare
SHARE = {share}  # indices per rank, the same at every N: only the job grows
SIZES = {sizes}  # N, each on N // SHARE ranks: the smallest and the largest the suite measured
OPTIONS = {options!r}
# The suite's bar: a figure grew {growth}-fold (from at least its floor) and passed its bar.
GROWTH, MEMORY, SECONDS, MEMORY_FLOOR, SECONDS_FLOOR = {growth}, {memory}, {seconds}, {memory_floor}, {seconds_floor}


{load}


def status(field):
    \"\"\"A figure of /proc/self/status (Linux), in bytes.\"\"\"
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) * 1024 for line in lines if line.startswith(field + ":"))


def measure(n):
    \"\"\"Rank 0 of n // SHARE ranks over range(n), built, set to epoch 0 and read to its first index
    in a child process, as the suite measures it: its peak resident memory above what the child
    held before the build, and the seconds from the build to the first index.\"\"\"
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, send the figures, leave
        try:
            gc.collect()
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")  # the peak, reset to what the process holds now
            before, start = status("VmRSS"), time.perf_counter()
            sampler = Sampler(range(n), {world_size_name}=n // SHARE, rank=0, **OPTIONS)
            if callable(getattr(sampler, "set_epoch", None)):
                sampler.set_epoch(0)
            next(iter(sampler))
            os.write(writing, f"{{status('VmHWM') - before}} {{time.perf_counter() - start}}".encode())
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as sent:
        said = sent.read()
    os.waitpid(pid, 0)
    if not said:  # exit 2: no verdict either way
        print(f"rank 0 of N={{n:,}} raised or its process died: nothing measured")
        sys.exit(2)
    peak, first = said.split()
    return int(peak), float(first)


def bars(peak, first):
    \"\"\"Which of the bars a size's figures pass (print(peak, first) to see the figures, which
    move from run to run).\"\"\"
    return (f"peak memory {{'over' if peak > MEMORY else 'under'}} {{MEMORY >> 20}} MB, "
            f"first index {{'after' if first > SECONDS else 'within'}} {{SECONDS}} s")


if not os.path.exists("/proc/self/clear_refs"):  # exit 2: no verdict either way
    print("the peak memory is measured as the suite measures it, through Linux's /proc/self: run this on Linux")
    sys.exit(2)
Sampler = load(SPEC)
figures = [measure(n) for n in SIZES]
print(f"{{SPEC}}: rank 0 of N // {{SHARE}} ranks, {{OPTIONS}}")
for n, (peak, first) in zip(SIZES, figures):
    print(f"N={{n:,}} on W={{n // SHARE:,}} ranks: {{bars(peak, first)}}")

# The promise: {promise}
{code}
{tail}"""


def cost_script(plug: SamplerPlug, contract: SamplerContract, record: Mapping[str, Any], filename: str) -> str:
    """The script that measures ``record``'s growth (the case the check charged: the largest N at
    the fixed share); CannotReproduce where the suite built the sampler with inputs of N items."""
    if contract.labels or contract.aspects:
        raise CannotReproduce("the sampler is built with a label or an aspect of every item: N of them are not written")
    parameters = record.get("parameters") or {}
    largest = parameters.get("dataset_size")
    if not largest or largest <= SIZES[0]:
        raise CannotReproduce("the record names no size past the smallest measured: no growth to measure again")
    options = plug.options_taken(IndexCase(SIZES[0], SIZES[0] // SHARE).within(contract).sampler_options(contract))
    return SCRIPT.format(
        docstring=docstring(record, script_spec(plug), filename),
        imports=imports(("gc", "time", "traceback")),
        spec=script_spec(plug),
        share=SHARE,
        sizes=(SIZES[0], largest),
        options=options,
        growth=GROWTH_CHARGED,
        memory=MEMORY_CHARGED,
        seconds=TIME_CHARGED_S,
        memory_floor=MEMORY_FLOOR,
        seconds_floor=TIME_FLOOR_S,
        load=LOAD,
        world_size_name=plug.world_size_name,
        promise=COST.promise,
        code=COST.code,
        tail=tail(record, COST.promise),
    )
