"""Rank pools made of the ranks torchrun started (the ``-m sampler_conformance.torchrun`` entry):
each worker's agent, the link through torchrun's c10d store, and rank 0's pools.
"""
