"""Conformance harness for distributed samplers.

One module per role:

- ``plug`` loads the sampler under test from its spec;
- ``case`` describes one drawn configuration and what the ranks yielded;
- ``strategies`` draws cases, ``profiles`` registers the Hypothesis profiles;
- ``reading`` pulls indices out of a sampler with bounds;
- ``runner`` simulates the ranks in-process, under a watchdog;
- ``checkers`` are the pure invariants, ``contracts`` says which a sampler promises;
- ``verdict`` turns violations into failure text, ``results`` and ``certificate`` into
  the verdict and the certificate;
- ``backend``, ``messages``, ``rank_pool``, ``rank_body`` and ``group`` run cases in
  real process groups;
- ``plugin`` is the pytest plugin that ties them together.
"""
