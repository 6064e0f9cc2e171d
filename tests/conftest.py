"""Settings for the whole test run.

Bytecode caches: the suite starts some hundreds of ``python -m commsim`` processes (interrupts, audits, the
fuzz's workers, notebooks) and pytest rewrites some hundred test modules.  With ``PYTHONDONTWRITEBYTECODE``
set (as on the CI machine) each of them would compile commsim and the tests from source again -- about 4 s of
collection per xdist worker and 0.2-0.5 s per process.  The run writes the standard ``__pycache__``
folders (git-ignored) whatever that variable says.

Threads: ``pytest -n 2`` already runs one test process per core, so torch's and the BLAS libraries' own thread
pools (one thread per core each by default) would only fight over the same cores -- OpenMP threads spin while
they wait: the your-model notebook (torch training) took 17 s beside another test, 6 s alone, 4.6 s with one
thread beside another test.  Each test process, and each process it starts, uses one such thread unless the
environment already says otherwise.  Nothing else in the environment is changed.
"""
from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)      # the processes the tests start inherit this
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")                 # read when torch and numpy load, which is after this

# Property tests: the ``ci`` profile draws the same examples on every run (derandomize: a seed derived from each
# test) and keeps no example database (a failure found once would otherwise be replayed on every later run of
# that checkout); no deadline, as a loaded CI machine runs an example at any speed.  It is loaded when the CI
# variable is set, and by ``--hypothesis-profile=ci`` (the README's test command, which .ci/run runs).  Other
# runs keep hypothesis's default profile -- random examples, which is how new failures are found.  (Recent
# hypothesis versions ship the same profile; it is registered here for every version the test extra allows.)
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI"):
    settings.load_profile("ci")
