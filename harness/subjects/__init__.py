"""Subjects: the kinds of thing under test, one folder each.

``index_sampler`` is the only one so far: an index sampler called the way
DistributedSampler is.
"""
