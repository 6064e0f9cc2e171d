"""Property tests are deterministic in CI: the ``ci`` hypothesis profile (tests/conftest.py) draws each test's
examples from a seed derived from the test itself and keeps no example database, and it is in effect when the
CI variable is set or ``--hypothesis-profile=ci`` is given (the README's test command)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
HERE = "tests/test_hypothesis_profile.py::test_the_ci_profile_is_in_effect_when_asked"


def test_the_ci_profile_is_in_effect_when_asked(request):
    asked = bool(os.environ.get("CI")) or request.config.getoption("hypothesis_profile", None) == "ci"
    if not asked:
        pytest.skip("this run asked for no ci profile (neither CI nor --hypothesis-profile=ci)")
    assert settings.default.derandomize is True
    assert settings.default.database is None


def test_the_ci_profile_is_registered_deterministic_and_without_a_database():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True and ci.database is None


def _readme_pytest_arguments() -> list[str]:
    """The pytest arguments of the README's test command (``.ci/run`` runs that command), without ``-n``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = readme.split("<!-- test-command -->", 1)[1].split("```")[1].strip()
    words = command.split("pytest", 1)[1].split()
    return [w for i, w in enumerate(words) if w != "-n" and not (i and words[i - 1] == "-n")]


@pytest.mark.parametrize("how", ["the README's test command", "CI=true"])
def test_ci_and_the_readme_command_select_it(how):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    args = _readme_pytest_arguments() if how.startswith("the README") else []
    if how == "CI=true":
        env["CI"] = "true"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "-n", "0", "-rs", *args, HERE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
