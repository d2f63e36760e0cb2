"""Reference samplers the suite is tested against.

- ``reference``: good samplers that must be certified, and the seed samplers
  (maskrcnn-benchmark, the tutorial's DataPartitioner) whose verdicts docs/real-samplers.md reports.
- ``parts``: a DistributedSampler reimplementation split into overridable steps.
- ``known_bad``: one small deviation from ``parts`` per bug a real project shipped.
- ``faulty``: samplers and attributes that make bad ``--sampler`` specs or raise.
"""
