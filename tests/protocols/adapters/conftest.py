"""One pair of audit workers for the tests of the torch adapters that compare an audited run with the in-process
run.

``--audit`` runs each party in its own spawned process, and each process's start imports torch (and transformers
for a Hugging Face model): some seconds a pair.  Those tests ask for ``shared_audit_workers``: their runs get, for
``AuditSession()``, one pair kept open for the whole test process.  Each run still sends its protocol and shares
to the two workers pickled, and they run it there; what is shared is only the start.  A run left in the middle of
a program (an error) closes the pair, and the next run starts its own.  Starting and closing a session per run
stays tested where the audit itself is the subject (tests/commsim/core/test_runner.py, the Ctrl-C tests of
tests/cli/test_hardening.py, the CLI's ``--audit``); the first audited run in each test process starts the pair.
"""
from __future__ import annotations

import pytest

from commsim.core.runner import AuditSession
from commsim.runs import stages


class KeptOpen(AuditSession):
    """Audit workers handed to one audited run after another: the close at a run's end leaves them for the
    next run, unless the run was left in the middle of a program (then they are done)."""
    closed = False

    def close(self, force: bool = False) -> None:
        if force or self._mid_run:
            super().close(force=True)
            self.closed = True

    def shut(self) -> None:
        super().close()


@pytest.fixture(scope="session")
def _kept_audit_workers():
    sessions: list[KeptOpen] = []

    def session() -> KeptOpen:
        if not sessions or sessions[-1].closed:
            sessions.append(KeptOpen())
        return sessions[-1]
    yield session
    for made in sessions:
        made.shut()


@pytest.fixture
def shared_audit_workers(_kept_audit_workers, monkeypatch):
    """For this test, ``AuditSession()`` in a run gives the test process's kept pair of audit workers."""
    monkeypatch.setattr(stages, "AuditSession", _kept_audit_workers)
