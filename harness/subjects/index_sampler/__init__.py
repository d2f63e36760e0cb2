"""The index sampler: a class or factory called like ``DistributedSampler(dataset,
num_replicas=W, rank=r, shuffle=..., seed=..., drop_last=...)``.

Its plug, its draws, how it is read, its checks and its scenarios, with the resumable and
elastic extensions (``resume_draws``, ``resume_checks``, ``elastic_checks``).
"""
