"""Settings for the whole test run.

Bytecode caches: the suite starts some hundreds of ``python -m commsim`` processes (interrupts, audits, the
fuzz's workers, notebooks) and pytest rewrites some hundred test modules.  With ``PYTHONDONTWRITEBYTECODE``
set (as on the CI machine) each of them would compile commsim and the tests from source again -- about 4 s of
collection per xdist worker and 0.2-0.5 s per process.  The run writes the standard ``__pycache__``
folders (git-ignored) whatever that variable says; nothing else in the environment is changed.
"""
from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)      # the processes the tests start inherit this
