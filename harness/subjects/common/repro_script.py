"""What every subject's reproduction script (docs/reproductions.md) is made of around its own
reading: the docstring, the imports, loading the spec, shortening a list, and the tail that
prints the suite's words and exits 1 while the promise is broken. Each subject's ``repro.py``
writes the reading and the promise; these parts are the same in every script."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from string import Template
from typing import Any

from sampler_conformance.core.subject import CannotReproduce, Plug
from sampler_conformance.execution.file_modules import is_file_module

from ..specs import split_spec

DOCSTRING = '''"""Reproduces [{title}] ({flag}) of {spec}
without the sampler conformance suite, as its {test} found it.
Run: python {filename} [MODULE:ATTR]; it exits 1 while the bug is there, 0 once it is fixed."""'''

LOAD = '''def load(spec):
    """The sampler or factory MODULE:ATTR (or FILE.py:ATTR) names."""
    where, _, attr = spec.rpartition(":")
    if where.endswith(".py"):  # imported from its folder, as python FILE.py runs it
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        where = os.path.basename(where)[:-3]
    else:  # as python -m does: the module may lie in this folder
        sys.path.insert(0, os.getcwd())
    return functools.reduce(getattr, attr.split("."), importlib.import_module(where))'''

SHORT = '''def short(values):
    """A list, its middle left out where it is long."""
    values = list(values)
    if len(values) <= 16:
        return str(values)
    return f"{str(values[:12])[:-1]}, ... {len(values) - 16} more ..., {str(values[-4:])[1:]}"'''

# The suite's bound on a count's two-sided p-value (harness.core.frequencies.two_sided_bound), for
# a statistical script, which imports math.
BOUND = '''def bound(count, trials, p):
    """A bound on the chance that Binomial(trials, p) falls as far from trials x p as count: 2 exp(-trials KL)."""
    if trials == 0:
        return 1.0
    kl = 0.0  # KL(count / trials || p) between Bernoulli distributions
    for a, b in ((count / trials, p), (1 - count / trials, 1 - p)):
        if a > 0:
            if b <= 0:
                return 0.0  # a count that p rules out
            kl += a * math.log(a / b)
    return min(1.0, 2 * math.exp(-trials * max(kl, 0.0)))'''

# Of the options the suite gives, those the factory under test names; {{ }} since it is formatted.
TAKEN = '''def taken(options):
    """Of ``options``, those the factory names (all of them, where it takes **kwargs)."""
    parameters = inspect.signature(Factory).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return options
    return {{name: value for name, value in options.items() if name in parameters}}'''

# A reading of each rank in turn, up to the first that raises: its exception is the fault.
# {unpacked}: what read_rank gives of one epoch; {name}: its items; {own}: where the subject's
# code runs. {{ }} since it is formatted.
FAULT_TEMPLATE = """fault = ""
for r in range(W):
    try:
        {unpacked} = read_rank(W, r, [EPOCH])
    except Exception as exc:  # the {thing}'s own: {own}
        fault = f"rank {{r}}: {{type(exc).__name__}}: {{exc}}"
        traceback.print_exc(file=sys.stdout)
        break
    print(f"rank {{r}} ({{len({name})}} {name}): {{short({name})}}")
"""
# A reading of a {thing} that read another epoch first, and a fresh one (the *_deterministic
# invariants): {pick} takes the items of read_rank's epoch, {hooked} sets whether the {thing}
# takes its epoch ({hook}). $before is the string.Template's.
TWICE_TEMPLATE = """BEFORE = $before  # the epoch the first {thing}s read before EPOCH, as the suite's test drew it
first = [read_rank(W, r, [BEFORE, EPOCH])[-1]{pick} for r in range(W)]
{hooked}
# A fresh {thing} reads EPOCH alone, as a run resumed there does; one without {hook}, its passes again.
fresh = [read_rank(W, r, [EPOCH] if hooked else [BEFORE, EPOCH])[-1]{pick} for r in range(W)]
for r in range(W):
    print(f"rank {{r}}: after epoch {{BEFORE}}: {{short(first[r])}}; fresh: {{short(fresh[r])}}")
"""
SAMPLER_RAISES = "in the factory, set_epoch, len() or its pass"  # where a sampler's code runs, for FAULT_TEMPLATE


def sampler_twice(data: str) -> str:
    """:data:`TWICE_TEMPLATE` for a sampler built from ``data`` (its weights, its lengths), hooked where it has set_epoch."""
    hooked = f'hooked = callable(getattr(Factory({data}, num_replicas=W, rank=0, **taken(OPTIONS)), "set_epoch", None))'
    return TWICE_TEMPLATE.format(thing="sampler", pick="[0]", hooked=hooked, hook="set_epoch")


# A script's main part: the factory loaded, the case said ({said}: an f-string's text), the reading,
# the promise and the tail.
MAIN = """Factory = load(SPEC)
print(f"{said}")
{where}{reading}
# The promise: {promise}
{code}
{tail}"""
IN_GROUPS = "# Found in real process groups; read here in one process, rank after rank.\n"

TAIL = """
if broken:
    print({words!r})
    print(f"here: {{shown}}")
    sys.exit(1)
print({held!r})
"""

# A state's trip through a checkpoint file, as trainers save and load one (weights_only=True: torch's
# default since 2.6), in the words of the suite's own (execution/checkpoint.py): the state as loaded
# and "", or the state itself and why torch refused it. A script that carries it imports io and torch.
THROUGH_CHECKPOINT = '''def through_checkpoint(state):
    """As a checkpoint file carries it: torch.save, then torch.load(weights_only=True), plain data only;
    where it cannot, the state itself and why not (the line where torch names what it refused)."""
    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
        buffer.seek(0)
        return torch.load(buffer, weights_only=True), ""
    except Exception as exc:
        why = next((line for line in str(exc).splitlines() if "Unsupported global" in line), str(exc))
        why = why.split("Unsupported global: ", 1)[-1].split(". Please use", 1)[0]
        return state, f"{type(exc).__name__}: {' '.join(why.split())[:300]}"'''

STANDARD_MODULES = ("functools", "importlib", "itertools", "os", "sys")  # what every script imports
THIRD_PARTY = ("numpy", "torch")  # imported after the standard library, where a script needs them
RAISED = "raised"  # a fault's words where the thing raised (not where it hung or its process died)
# The largest N a script reads every rank of, as Python lists: the drawn cases go to 10,000; the
# numeric edges (2^24 + 1 and up, --scale) are read on a few ranks only (docs/scale.md).
LARGEST_READ = 1_000_000


def imports(more: tuple[str, ...]) -> str:
    """The script's import lines: the standard library's, then torch or numpy where it needs them."""
    standard = sorted({*STANDARD_MODULES, *(m for m in more if m not in THIRD_PARTY)})
    third = [m for m in THIRD_PARTY if m in more]
    lines = [f"import {m}" for m in standard]
    return "\n".join(lines + ([""] + [f"import {m}" for m in third] if third else []))


def script_spec(plug: Plug) -> str:
    """The spec as the script names it: a file module by its absolute path (the script may run elsewhere)."""
    module_part, attr = split_spec(plug.spec, "")
    return f"{Path(module_part).resolve()}:{attr}" if is_file_module(module_part) else plug.spec


def docstring(record: Mapping[str, Any], spec: str, filename: str) -> str:
    return DOCSTRING.format(
        title=record["title"], flag=record["flag"], spec=spec, test=record["test"], filename=filename
    )


def tail(record: Mapping[str, Any], promise: str) -> str:
    """Prints the suite's words and the offending values, and exits 1, while the promise is broken."""
    words = f"FAILED [{record['title']}] {record['message'].splitlines()[0]}"
    return TAIL.format(words=words, held=f"held: {promise}")


def drawn(record: Mapping[str, Any], label: str) -> Any:
    """What the failing test drew under ``label`` ("Draw 6 (global RNG seed): 0", "Draw 7
    (epochs): [0, 3]"), or None."""
    for line in record.get("draws") or ():
        found = re.fullmatch(rf"Draw \d+ \({re.escape(label)}\): (.*)", line)
        if found:
            return ast.literal_eval(found.group(1))
    return None


THRESHOLD = re.compile(r"against a threshold of ([0-9.e+-]+)")  # a frequency test's words (FrequencyVerdict)


def threshold(record: Mapping[str, Any]) -> str | None:
    """The threshold of the failing frequency test, as its words give it, or None."""
    found = THRESHOLD.search(record["message"])
    return found and found.group(1)


def written_in(reading: str, values: Mapping[str, Any]) -> str:
    """``reading`` (a ``string.Template``) with ``values`` written in: what the failing test drew,
    where its record holds it; CannotReproduce where one the reading names is None."""
    for name, value in values.items():
        if f"${name}" in reading and value is None:
            raise CannotReproduce(f"the failing test's record holds no {name.replace('_', ' ')}: nothing to draw again")
    return Template(reading).substitute(values)


def snippet_for(
    record: Mapping[str, Any], snippets: Mapping[str, Any], fault: str, noun: str, at_the_edge: Collection[str] = ()
) -> Any:
    """Of ``snippets`` (a subject's, each with its ``reading``), the one that reproduces
    ``record``; CannotReproduce where none does: no reading of its flag yet, a fault (read by
    ``fault``) where the thing hung or its process died, no case to build, or a numeric edge
    where the flag is not among ``at_the_edge`` (those whose reading affords it there)."""
    flag = record["flag"]
    if flag not in snippets:
        raise CannotReproduce(f"no plain-Python reading of {flag} yet (covered: {', '.join(snippets)})")
    found = snippets[flag]
    if found.reading == fault and RAISED not in record["message"]:
        raise CannotReproduce(f"the {noun} hung or its process died: a script would hang or die with it")
    if not record.get("parameters"):
        raise CannotReproduce("it holds on no case in particular: no case to build")
    refuse_at_the_edge(record["parameters"]["dataset_size"], flag, at_the_edge)
    return found


def refuse_at_the_edge(size: int, flag: str, at_the_edge: Collection[str] = ()) -> None:
    """CannotReproduce where ``size`` is a numeric edge (past :data:`LARGEST_READ`) and ``flag``
    is not among ``at_the_edge``, the flags a script is written for there."""
    if size > LARGEST_READ and flag not in at_the_edge:
        written = f" (written for {', '.join(sorted(at_the_edge))})" if at_the_edge else ""
        raise CannotReproduce(f"N={size:,} is a numeric edge: a script of {flag} reading it is not written{written}")


def main_part(said: str, record: Mapping[str, Any], reading: str, promise: str, code: str) -> str:
    """The script's main part (:data:`MAIN`) for ``record``: a failure found in real groups only is
    read in one process, rank after rank, and the script says so."""
    return MAIN.format(
        said=said,
        where=IN_GROUPS if record.get("in_groups") else "",
        reading=reading,
        promise=promise,
        code=code,
        tail=tail(record, promise),
    )
