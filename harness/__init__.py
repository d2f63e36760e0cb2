"""sampler_conformance: the conformance suite for distributed samplers in PyTorch.

For a user's test file or script (``api``)::

    from sampler_conformance import check_sampler, parametrize_with_checks

The certification itself is ``sampler-conformance SPEC`` (``cli``), ``pytest --pyargs
sampler_conformance --sampler=SPEC`` or, across nodes, ``torchrun ... -m
sampler_conformance.torchrun SPEC``. In the repository this package is the folder
``harness/``; the build maps ``properties/``, ``conformance/`` and ``adapters/`` into it.

One module per role:

- ``plug`` loads the sampler under test from its spec;
- ``case`` describes one drawn configuration and what the ranks yielded;
- ``strategies`` draws cases, ``profiles`` registers the Hypothesis profiles;
- ``reading`` pulls indices out of a sampler with bounds;
- ``runner`` simulates the ranks in one supervised sampler process;
- ``checkers`` are the pure invariants, ``contracts`` says which a sampler promises;
- ``verdict`` holds failures as structured evidence and renders their text, ``results``
  and ``certificate`` turn them into the verdict and the certificate;
- ``blame`` tells the sampler's frames from the suite's machinery (evidence before blame),
  ``crashes`` makes one crash one finding (faults set aside, charged to edge_sizes);
- ``backend``, ``messages``, ``rank_pool``, ``rank_body`` and ``scenarios`` run cases in
  real process groups and in the sampler process;
- ``torchrun`` is the ``-m`` entry under torchrun: rank 0 runs the certification while
  each worker supervises its rank's child (``torchrun_agent``), relayed through torchrun's
  c10d store (``torchrun_link``) to rank 0's pools of those ranks (``torchrun_pool``);
- ``layout`` says where the test folders lie;
- ``plugin`` is the pytest plugin that ties them together; ``activation`` is its entry
  point, inert unless asked; ``cli`` and ``api`` run it for the console script and for
  a user's own tests.

PYTEST_DONT_REWRITE: the console script and the torchrun entry import this package before
pytest starts, and pytest would warn that it cannot rewrite it; it holds no assert.
"""

__all__ = ["check_sampler", "parametrize_with_checks"]


def __getattr__(name: str):  # lazy: the pytest11 entry point imports this package in every pytest run
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
