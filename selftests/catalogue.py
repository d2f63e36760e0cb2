"""Which property proves itself against which known-bad subject: the tables of expected verdicts.

Each known-bad class or factory of ``selftests/corpus/`` declares what its bug must make a
certification charge, with ``@rejected(...)`` above it (``corpus/rejections.py``): the test
and the invariant that must catch it, what else it breaks, the contract and how it is run.
The tables below are derived from those declarations, one per selftest that runs them: a
``--sampler`` spec to its :class:`Rejection` (the failure text starts with the invariant's
bracketed title, :func:`title_of`). ``python -m selftests.catalogue`` prints the tables of
docs/contracts.md.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

from sampler_conformance.core.invariants import Where
from sampler_conformance.subjects import REGISTRY, SUBJECTS, contract_named, subject_of

from .corpus import (
    batch_bad,
    elastic_bad,
    families,
    known_bad,
    loader_bad,
    mesh_bad,
    multiprocess_bad,
    resume_bad,
    scale_bad,
    streams_bad,
    weighted_bad,
)
from .corpus.rejections import Rejection


def declared_rejections(module: ModuleType) -> list[tuple[str, Rejection]]:
    """``(MODULE:ATTR, rejection)`` for every rejection declared on a known-bad ``module``
    defines, in its order (its own declarations, never a base class's)."""
    return [
        (f"{module.__name__}:{name}", rejection)
        for name, bad in vars(module).items()
        if getattr(bad, "__module__", None) == module.__name__
        for rejection in getattr(bad, "__dict__", {}).get("rejections", ())
    ]


def rejections(
    module: ModuleType, *, under: str | None = None, whole_suite: bool | None = None
) -> dict[str, Rejection]:
    """``MODULE:ATTR`` -> its rejection, for every known-bad ``module`` defines that declares one
    ``under`` that contract and run ``whole_suite`` or not (either, where not given)."""
    found: dict[str, Rejection] = {}
    for spec, rejection in declared_rejections(module):
        if (under is None or rejection.under == under) and (
            whole_suite is None or rejection.whole_suite == whole_suite
        ):
            if spec in found:
                raise ValueError(f"{spec} declares two rejections under {rejection.under!r}: name how each is run")
            found[spec] = rejection
    return found


def title_of(rejection: Rejection) -> str:
    """The bracketed title its failure text starts with: the invariant's, or where the subject
    raises, its subject's fault ("[dataset fault]": whichever property was checking)."""
    if not rejection.crashes:
        return f"[{REGISTRY[rejection.flag].title}]"
    return f"[{subject_of(contract_named(rejection.under)).fault_title}]"


KNOWN_BAD: dict[str, Rejection] = rejections(known_bad, under="torch", whole_suite=False)

SCALABLE_CONTRACT = "torch+scalable"
# The reference that computes its share lazily: the fixed sampler of the known-bads of scale (a
# cost of N, the numeric edges), at whose sizes torch's, holding N indices a rank, costs too much.
LAZY_REFERENCE = "sampler_conformance.adapters.lazy_permutation:LazyDistributedSampler"
# What only the cost measured before the draws shows, certified under torch+scalable (selftests/test_scale.py).
SCALABLE_BAD: dict[str, Rejection] = rejections(known_bad, under=SCALABLE_CONTRACT)
# What only the numeric edges show of the other subjects, certified with --scale (selftests/test_scale.py).
SCALE_BAD: dict[str, Rejection] = rejections(scale_bad)

# The invariants only real process groups check, each with a sampler that breaks it there,
# run through the whole suite at W=2 (selftests/test_contracts.py).
CONFORMANCE_BAD: dict[str, Rejection] = {
    **rejections(multiprocess_bad, whole_suite=True),
    **rejections(known_bad, whole_suite=True),
}

# The known-bad samplers of the other index-sampler contracts, each certified in-process
# under the contract it breaks (selftests/test_contracts.py).
FAMILIES_BAD: dict[str, Rejection] = rejections(families)

RESUMABLE_CONTRACT = "torch+resumable"

# The resume bugs, certified under torch+resumable (selftests/test_resume.py).
RESUME_BAD: dict[str, Rejection] = rejections(resume_bad, whole_suite=False)

# The resume bugs only real process groups show, certified under torch+resumable by the
# whole suite (properties/ and conformance/, --world-sizes=GROUP_WORLD_SIZES).
RESUME_GROUP_BAD: dict[str, Rejection] = rejections(resume_bad, whole_suite=True)
GROUP_WORLD_SIZES = "2"

# Megatron-LM's MegatronPretrainingRandomSampler, ported (selftests/corpus/megatron.py): a real
# sampler that yields batches and fails the resume and elastic invariants (docs/real-samplers.md),
# whose scripts selftests/test_resume.py and test_elastic.py check.
MEGATRON_RANDOM = "selftests.corpus.megatron:pretraining_random_sampler"

ELASTIC_CONTRACT = "torch+elastic"
# The elastic bugs, certified under torch+elastic by the whole suite (properties/ and
# conformance/, --world-sizes=ELASTIC_WORLD_SIZES: both changes, 1 -> 2 and 2 -> 1, in groups).
ELASTIC_BAD: dict[str, Rejection] = rejections(elastic_bad)
ELASTIC_WORLD_SIZES = "1,2"

STREAMS_BAD_MODULE = streams_bad.__name__
STREAM_CONTRACT = "stream"

# The streaming datasets' bugs, certified under stream (selftests/test_streams.py): in-process...
STREAMS_BAD: dict[str, Rejection] = rejections(streams_bad, under=STREAM_CONTRACT, whole_suite=False)
# ...and the bugs only real process groups show, certified by the whole suite.
STREAMS_GROUP_BAD: dict[str, Rejection] = rejections(streams_bad, under=STREAM_CONTRACT, whole_suite=True)
# ...and the bugs of datasets that pad or drop to make the ranks' counts equal, or mix
# sources by weight, certified in-process under the contract their bug breaks.
STREAMS_OTHER_CONTRACTS_BAD: dict[str, Rejection] = {
    **rejections(streams_bad, under="stream_padded"),
    **rejections(streams_bad, under="stream_truncated"),
    **rejections(streams_bad, under="stream_mix"),
}
# ...and the bugs of a resume through StatefulDataLoader, which real process groups show,
# certified by the whole suite under stream+resumable.
STREAM_RESUMABLE_CONTRACT = "stream+resumable"
STREAMS_RESUME_BAD: dict[str, Rejection] = rejections(streams_bad, under=STREAM_RESUMABLE_CONTRACT)
STREAM_WORLD_SIZES = "2"

GOOD = (
    "torch.utils.data.distributed:DistributedSampler",
    "selftests.corpus.reference:NumpyDistributedSampler",
    "selftests.corpus.parts:PartsSampler",  # the base every known-bad sampler deviates from
)


def known_bad_bug(spec: str) -> str:
    """The first paragraph of any known-bad's docstring (``MODULE:ATTR``), on one line."""
    module, _, attribute = spec.rpartition(":")
    documented = getattr(importlib.import_module(module), attribute)
    return " ".join((inspect.getdoc(documented) or "").split("\n\n")[0].split())


def invariant_tables() -> str:
    """Two Markdown tables per subject. Its promises: each one's name and words, the
    invariants that say it, and the contracts composed of it (an extension is a promise of its
    own). Then every invariant it declares: the flag and its title, where it is checked, the
    contracts and extensions that promise it, the bug class it guards against, and its
    known-bad with that bug. Derived from the declarations alone (``Invariant``,
    ``Subject.contracts``, ``Subject.extensions``)."""
    parts = []
    for name, subject in SUBJECTS.items():
        rows = [
            f"### {name}",
            "",
            "| promise | what it promises | invariants | composed into |",
            "| --- | --- | --- | --- |",
        ]
        joint = subject.joint_promises.values()
        for promise in [*subject.promises.values(), *subject.extensions.values(), *(p for _, p in joint)]:
            flags = ", ".join(f"`{i.flag}`" for i in subject.invariants if i.flag in promise.flags)
            into = [f"`{c}`" for c, contract in subject.contracts.items() if promise in contract.composed_of]
            into += [f"`{together}`, together" for together, p in joint if p is promise]
            rows.append(f"| `{promise.name}` | {promise.description} | {flags} | {', '.join(into) or 'an extension'} |")
        rows += [
            "",
            "| invariant | checked | promised by | guards against | known-bad: its bug |",
            "| --- | --- | --- | --- | --- |",
        ]
        for invariant in subject.invariants:
            promised = [f"`{c}`" for c, contract in subject.contracts.items() if invariant.flag in contract.flags]
            promised += [f"`+{e}`" for e, extension in subject.extensions.items() if invariant.flag in extension.flags]
            promised += [f"`{together}`" for together, p in joint if invariant.flag in p.flags]
            known_bad = invariant.known_bad.rpartition(":")[2]
            rows.append(
                f"| `{invariant.flag}`: {invariant.title} | {WHERE_WORDS[invariant.where]} | {', '.join(promised)} "
                f"| {invariant.guards} | `{known_bad}`: {known_bad_bug(invariant.known_bad)} |"
            )
        parts.append("\n".join(rows))
    return "\n\n".join(parts)


WHERE_WORDS = {
    Where.BOTH: "in-process, groups",
    Where.IN_PROCESS: "in-process",
    Where.GROUPS: "groups",
    Where.MESH: "meshes, every request",
}
# docs/contracts.md holds invariant_tables()'s output between these lines (test_registry checks it).
GENERATED_BEGIN = "<!-- generated by python -m selftests.catalogue: do not edit -->"
GENERATED_END = "<!-- end of generated -->"


def property_table() -> str:
    """Markdown rows: property, what it guards, the known-bad samplers that prove it."""
    rows = ["| property | test | guards against | known-bad sampler: bug |", "| --- | --- | --- | --- |"]
    by_flag: dict[str, list[str]] = {}
    for spec, rejection in KNOWN_BAD.items():
        by_flag.setdefault(rejection.flag, []).append(spec)
    tests = {rejection.flag: rejection.test for rejection in KNOWN_BAD.values()}
    for flag, specs in by_flag.items():
        proofs = "<br>".join(f"`{spec.rpartition(':')[2]}`: {known_bad_bug(spec)}" for spec in specs)
        rows.append(f"| {REGISTRY[flag].title} | `{tests[flag]}` | {REGISTRY[flag].guards} | {proofs} |")
    return "\n".join(rows)


# The weighted samplers' bugs, certified under weighted by properties/ (selftests/test_weighted.py).
WEIGHTED_BAD_MODULE = weighted_bad.__name__
WEIGHTED_CONTRACT = "weighted"
WEIGHTED_BAD: dict[str, Rejection] = rejections(weighted_bad, under=WEIGHTED_CONTRACT)
# ...and under weighted_partition, what MONAI's DistributedWeightedRandomSampler promises.
WEIGHTED_PARTITION_CONTRACT = "weighted_partition"
WEIGHTED_PARTITION_BAD: dict[str, Rejection] = rejections(weighted_bad, under=WEIGHTED_PARTITION_CONTRACT)
# ...and under weighted_without_replacement, what lhotse's WeightedSimpleCutSampler promises.
WITHOUT_REPLACEMENT_CONTRACT = "weighted_without_replacement"
WITHOUT_REPLACEMENT_BAD: dict[str, Rejection] = rejections(weighted_bad, under=WITHOUT_REPLACEMENT_CONTRACT)

# Known-bad batch samplers (selftests/corpus/batch_bad.py), under dynamic_batches...
DYNAMIC_BATCHES_CONTRACT = "dynamic_batches"
DYNAMIC_BATCHES_BAD: dict[str, Rejection] = rejections(batch_bad, under=DYNAMIC_BATCHES_CONTRACT)
# ...under micro_batches...
MICRO_BATCHES_CONTRACT = "micro_batches"
MICRO_BATCHES_BAD: dict[str, Rejection] = rejections(batch_bad, under=MICRO_BATCHES_CONTRACT)
# ...and under poisson.
POISSON_CONTRACT = "poisson"
POISSON_BAD: dict[str, Rejection] = rejections(batch_bad, under=POISSON_CONTRACT)

# Known-bad data loaders (selftests/corpus/loader_bad.py), each under the contract its bug breaks:
# data_loader, data_loader+elastic for the world-size promise, +resumable for a resume (and
# data_loader+elastic+resumable for a resume on another DP size; selftests/test_loaders.py).
DATA_LOADER_CONTRACT = "data_loader"
DATA_LOADER_BAD: dict[str, Rejection] = rejections(loader_bad)

# The bugs of a meshed job, certified under torch+mesh by the whole suite (selftests/test_meshes.py):
# groups of MESH_WORLD_SIZES besides the meshes of --meshes' default (or of the rejection's own).
MESH_CONTRACT = "torch+mesh"
MESH_BAD: dict[str, Rejection] = rejections(mesh_bad, under=MESH_CONTRACT)
MESH_WORLD_SIZES = "2"
# ...a sampler that shuffles its own share, and so promises no one order across processes:
# partition less across_processes, on meshes...
MESH_LOCAL_SHUFFLE_CONTRACT = "valid,finite_epochs,exact_partition,deterministic,seed_effective+mesh"
MESH_LOCAL_SHUFFLE_BAD: dict[str, Rejection] = rejections(mesh_bad, under=MESH_LOCAL_SHUFFLE_CONTRACT)
# ...and the streams' bugs, under stream+mesh.
MESH_STREAM_CONTRACT = "stream+mesh"
MESH_STREAM_BAD: dict[str, Rejection] = rejections(mesh_bad, under=MESH_STREAM_CONTRACT)
# ...and the data loaders', under data_loader+mesh.
MESH_LOADER_CONTRACT = "data_loader+mesh"
MESH_LOADER_BAD: dict[str, Rejection] = rejections(mesh_bad, under=MESH_LOADER_CONTRACT)

# Every table of expected verdicts, each run by its own selftest: a known-bad counts as
# proven (test_registry) only through one of them.
TABLES: tuple[dict[str, Rejection], ...] = (
    KNOWN_BAD,
    SCALABLE_BAD,
    SCALE_BAD,
    CONFORMANCE_BAD,
    FAMILIES_BAD,
    RESUME_BAD,
    RESUME_GROUP_BAD,
    ELASTIC_BAD,
    STREAMS_BAD,
    STREAMS_GROUP_BAD,
    STREAMS_OTHER_CONTRACTS_BAD,
    STREAMS_RESUME_BAD,
    WEIGHTED_BAD,
    WEIGHTED_PARTITION_BAD,
    WITHOUT_REPLACEMENT_BAD,
    DYNAMIC_BATCHES_BAD,
    MICRO_BATCHES_BAD,
    POISSON_BAD,
    DATA_LOADER_BAD,
    MESH_BAD,
    MESH_LOCAL_SHUFFLE_BAD,
    MESH_STREAM_BAD,
    MESH_LOADER_BAD,
)


if __name__ == "__main__":
    print(property_table(), "", GENERATED_BEGIN, invariant_tables(), GENERATED_END, sep="\n")
