"""Issue 56's proof over the whole catalogue, read from the declarations: every invariant each
known-bad must fail (its ``@rejected(...)``) is one its subject writes a reproduction script for
under the known-bad's contract (``Subject.scripted``), or one :data:`NOT_SCRIPTED` says why not.

The selftest of each table of expected verdicts certifies its known-bads with ``--repro=on`` and
checks every script the run offered (``reproduced.assert_reproduced``): it exited 1 with the
violation's words, twice alike, and exits 0 against the contract's reference. This file keeps
the list of what has no script short, and true: a flag that gets one must leave it."""

from __future__ import annotations

from sampler_conformance.subjects import contract_named, subject_of

from .catalogue import TABLES

# (known-bad, invariant) -> why its failure gets no script (docs/reproductions.md, "Not yet").
NOT_SCRIPTED: dict[tuple[str, str], str] = {}


def unscripted() -> dict[tuple[str, str], str]:
    """(known-bad, invariant) -> its contract, for each invariant a known-bad must fail that its
    subject writes no script for."""
    found = {}
    for table in TABLES:
        for spec, rejection in table.items():
            contract = contract_named(rejection.under)
            for flag in rejection.failed - subject_of(contract).scripted(contract):
                found[spec.rpartition(":")[2], flag] = rejection.under
    return found


def test_every_known_bad_failure_has_a_script_or_a_reason_declared_here():
    found = unscripted()
    assert set(found) == set(NOT_SCRIPTED), (
        f"no script and no reason: {sorted(set(found) - set(NOT_SCRIPTED))}; "
        f"scripted now, to leave NOT_SCRIPTED: {sorted(set(NOT_SCRIPTED) - set(found))}"
    )
