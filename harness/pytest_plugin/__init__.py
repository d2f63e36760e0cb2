"""What the pytest plugin (``sampler_conformance.plugin``) registers and relies on: the
Hypothesis profiles, the crash bookkeeping, and where the test folders lie.
"""
