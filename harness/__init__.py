"""sampler_conformance: the conformance suite for distributed samplers in PyTorch.

For a user's test file or script (``api``)::

    from sampler_conformance import check_sampler, parametrize_with_checks

The certification itself is ``sampler-conformance SPEC`` (``cli``), ``pytest --pyargs
sampler_conformance --sampler=SPEC`` or, across nodes, ``torchrun ... -m
sampler_conformance.torchrun SPEC``. In the repository this package is the folder
``harness/``; the build maps ``properties/``, ``conformance/`` and ``adapters/`` into it.

One folder per role (docs/architecture.md has a line for every module). Imports point
downward, core <- execution <- subjects <- pytest_plugin and report <- the entry modules,
as ``selftests/test_architecture.py`` checks:

- ``core``: the vocabulary. ``case`` (a drawn configuration and what the ranks yielded),
  ``invariants`` (the registry), ``contracts`` (what a sampler promises), ``evidence``
  (failures as structured evidence, and their text);
- ``execution``: how ranks run a scenario. ``scenario`` (the base every subject's
  scenarios build on, and ``ask``), ``rank_pool`` and ``rank_body`` (live processes, in
  real groups or simulating the ranks), ``messages``, ``simulator`` (the in-process
  runner's sampler process), ``backend``, ``fork_server``, ``global_rng``, ``blame`` (the
  sampler's frames told from the suite's), and ``torchrun`` (each worker's ``agent``,
  the ``link`` through torchrun's c10d store, rank 0's ``pool``);
- ``subjects``: what is under test, one folder per kind. ``index_sampler`` holds the
  ``plug`` (loads the sampler from its spec), ``draws`` (the Hypothesis strategies),
  ``reading``, ``dataset``, ``seed_range``, ``checks`` (the per-epoch table; its invariants
  as pure functions, by promise, in ``length_checks``, ``partition_checks``,
  ``layout_checks``, ``batch_checks``, ``group_checks`` and ``aspect_checks``),
  ``scenarios`` (what a rank does, written once for both runners), ``runs`` (the views of
  their replies that the checks judge), ``simulated`` (a case read by the in-process
  runner), and the resumable and elastic extensions (``resume_draws``, ``resume_checks``,
  ``elastic_checks``);
- ``pytest_plugin``: ``profiles`` (the Hypothesis profiles), ``crashes`` (one crash is
  one finding), ``folders`` (where the test folders lie);
- ``report``: ``results`` (the verdict) and ``certificate``;
- the entry modules: ``plugin`` is the pytest plugin that ties them together;
  ``activation`` is its entry point, inert unless asked; ``cli`` and ``api`` run it for the
  console script and for a user's own tests; ``torchrun`` is the ``-m`` entry under torchrun.

PYTEST_DONT_REWRITE: the console script and the torchrun entry import this package before
pytest starts, and pytest would warn that it cannot rewrite it; it holds no assert.
"""

__all__ = ["check_sampler", "parametrize_with_checks"]


def __getattr__(name: str):  # lazy: the pytest11 entry point imports this package in every pytest run
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
