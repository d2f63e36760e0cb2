"""A run says where it is: a line as each invariant is settled, with its status and the
count of those settled (report/progress.py)."""

from __future__ import annotations

import re

import pytest

from .suite_run import certify

# "pads_from_head: failed  [6 of 8 invariants settled, 1.3 s; about 2 s left]"
_SETTLED = re.compile(r"^(\w+): ([a-z ]+)  \[(\d+) of (\d+) invariants settled, [^\]]+\]$", re.MULTILINE)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["in_one_process", "xdist"])
def test_each_invariant_is_settled_once_with_its_status_as_the_count_goes_up(pytester, workers):
    """The per-epoch tests of a sampler that pads from the tail: each invariant they check is
    settled once, pads_from_head as failed, in pytest-xdist's controller too (its workers
    send what they collected)."""
    run = certify(pytester, "selftests.corpus.known_bad:PadsFromTail", "-k", "per_epoch", "--world-sizes=2", *workers)
    settled = _SETTLED.findall(run.output)
    checked = {flag: status for flag, status in run.statuses.items() if status not in ("not promised", "not run")}
    assert sorted(flag for flag, *_ in settled) == sorted(checked), run.explain()
    assert {flag: status for flag, status, *_ in settled} == checked, run.explain()
    assert checked["pads_from_head"] == "failed", run.statuses
    assert [(int(n), int(of)) for *_, n, of in settled] == [(n, len(checked)) for n in range(1, len(checked) + 1)]
