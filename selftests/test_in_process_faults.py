"""A sampler that blocks in-process fails the run within --rank-timeout, never hangs it."""

from __future__ import annotations

from .suite_run import certify

BLOCKING_SAMPLER = """
import time
from torch.utils.data import DistributedSampler

class BlocksOnLargeDatasets(DistributedSampler):
    def __iter__(self):
        if len(self.dataset) > 3:
            time.sleep(3600)  # a deadlock, as far as the suite can tell
        return super().__iter__()
"""


def test_blocking_sampler_fails_within_the_timeout_with_its_stack(pytester):
    pytester.makepyfile(blocking=BLOCKING_SAMPLER)
    run = certify(
        pytester, f"{pytester.path / 'blocking.py'}:BlocksOnLargeDatasets", "--rank-timeout=2", "-k", "lengths",
        timeout=120,
    )
    assert run.exit_code == 1, run.explain()
    assert "did not finish within 2 s (--rank-timeout); it hangs" in run.output, run.explain()
    assert "time.sleep(3600)" in run.output, run.explain()  # the sampler's own frame
    # Later tests fail at once instead of each waiting out the timeout again.
    assert "the sampler hung earlier in this session on case" in run.output, run.explain()
