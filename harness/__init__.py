"""Conformance harness for distributed samplers.

One module per role:

- ``plug`` loads the sampler under test from its spec;
- ``case`` describes one drawn configuration and what the ranks yielded;
- ``strategies`` draws cases, ``profiles`` registers the Hypothesis profiles;
- ``reading`` pulls indices out of a sampler with bounds;
- ``runner`` simulates the ranks in-process, under a watchdog;
- ``checkers`` are the pure invariants, ``contracts`` says which a sampler promises;
- ``verdict`` holds failures as structured evidence and renders their text, ``results``
  and ``certificate`` turn them into the verdict and the certificate;
- ``blame`` tells the sampler's frames from the suite's machinery (evidence before blame),
  ``crashes`` makes one crash one finding (faults set aside, charged to edge_sizes);
- ``backend``, ``messages``, ``rank_pool``, ``rank_body`` and ``group`` run cases in
  real process groups;
- ``plugin`` is the pytest plugin that ties them together.
"""
