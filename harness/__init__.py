"""Conformance harness for distributed samplers.

One module per role: ``plug`` loads the sampler under test, ``case`` describes one
drawn configuration, ``strategies`` draws them, ``reading`` pulls indices out of a
sampler with bounds, ``runner`` simulates ranks in-process, ``checkers`` are the pure
invariants, ``verdict`` turns violations into failure text, ``contracts`` names what a
sampler promises, ``profiles`` registers the Hypothesis profiles and ``plugin`` is the
pytest plugin that ties them together.
"""
