"""Packaging: the README's test command installs every extra the tests use and says which; the wheel builds
without setuptools' deprecation warnings (an SPDX license expression, the license file shipped) and, installed
without ``-e`` into a fresh virtual environment, runs the main job and writes an HTML page -- whatever the
package needs at run time ships in the wheel."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: what is not part of the source tree a wheel is built from
JUNK = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".hypothesis", ".pytest_cache", "test-artifacts",
                              "build", "dist", "*.egg-info", "site", ".mypy_cache", ".ruff_cache")


def _test_command() -> tuple[str, str]:
    """The README's test command and the sentence before it."""
    found = re.search(r"\n\n([^\n]+(?:\n[^\n]+)*)\n\n<!-- test-command -->\n```\n([^\n]+)\n```", README)
    assert found, "no test command after <!-- test-command --> in README.md"
    return found.group(2), " ".join(found.group(1).split())


def test_the_readme_test_command_installs_every_extra_and_says_so():
    command, sentence = _test_command()
    installed = re.search(r'pip install -e "\.\[([a-z,]+)\]"', command).group(1).split(",")
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert sorted(installed) == sorted(extras), "the tests use every extra; the test command must install them all"
    named = re.findall(r"[a-z]+", sentence.split("--")[1]) if "--" in sentence else []
    assert set(extras) <= set(named), f"the sentence before the test command must name what it installs: {sentence}"
    assert "torch-geometric==2.8.1" in extras["graph"]


def test_the_license_is_an_spdx_expression_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"] and (ROOT / "LICENSE").read_text().startswith("MIT License")
    requires = PYPROJECT["build-system"]["requires"]
    setuptools = next(r for r in requires if r.startswith("setuptools"))
    assert int(re.search(r">=(\d+)", setuptools).group(1)) >= 77   # the first setuptools that reads them


def _clean_env(**extra) -> dict:
    """The environment without anything pointing Python at the source tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **extra}


@pytest.mark.slow
def test_the_wheel_builds_cleanly_installs_and_runs(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=JUNK)
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-W", "always", "-c",
                            f"import setuptools.build_meta as b; print(b.build_wheel({str(dist)!r}))"],
                           cwd=source, env=_clean_env(), capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "SetuptoolsDeprecationWarning" not in build.stderr, build.stderr[-3000:]
    wheel = dist / build.stdout.strip().splitlines()[-1]
    names = zipfile.ZipFile(wheel).namelist()
    assert "commsim-0.1.0.dist-info/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read("commsim-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata

    # a fresh environment: the wheel installed (not editable), the dependencies read from this environment's
    # site-packages (a path entry: its .pth files, an editable install of the source tree among them, stay off)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                              "--no-index", "--disable-pip-version-check", str(wheel)],
                             env=_clean_env(), capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    work = tmp_path / "work"
    work.mkdir()
    where = subprocess.run([str(python), "-c", "import commsim; print(commsim.__file__)"], cwd=work,
                           env=_clean_env(), capture_output=True, text=True, timeout=300)
    assert where.stdout.strip().startswith(purelib), (where.stdout, where.stderr)   # the wheel's copy
    command = venv / "bin" / "commsim"
    job = subprocess.run([str(command), "run", "index-idxl"], cwd=work, env=_clean_env(), capture_output=True,
                         text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    assert "index-idxl" in job.stdout
    page = subprocess.run([str(command), "run", "index-idxl", "--html", "run.html"], cwd=work, env=_clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert page.returncode == 0, page.stderr[-3000:]
    html = (work / "run.html").read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "index-idxl" in html
