"""The vocabulary every other folder speaks: cases, the invariant registry, contracts and evidence.

Nothing here imports pytest, Hypothesis or torch.distributed.
"""
