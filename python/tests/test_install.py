"""The package installs offline on Debian 12 (python3-venv, python3-setuptools, python3-numpy),
imports from outside the checkout, and registers its pytest plugin."""
import shutil
import subprocess
import sys

import pytest

from conftest import PACKAGE


def test_pip_install_offline(tmp_path):
    source = tmp_path / "source"  # setuptools builds in the tree it is given: not the checkout's
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The install needs only the system's numpy and setuptools (Debian's python3-numpy and
    # python3-setuptools). A python that is itself a venv (the GPU machine's) passes its own
    # packages to no child venv: there the offline install cannot find numpy, and says so.
    sees = subprocess.run([str(python), "-c", "import numpy, setuptools"], capture_output=True, text=True)
    if sees.returncode != 0 and sys.prefix != sys.base_prefix:
        pytest.skip(f"{sys.executable} is a venv: a child venv does not see its numpy (needs Debian's python3)")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet",
                           str(source)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    env = {"PATH": str(venv / "bin"), "HOME": str(tmp_path)}  # no PYTHONPATH: the installed copy
    where = subprocess.run([str(python), "-c", "import mqacheck, mqacheck.conventions, mqacheck.references.numpy_styles;"
                            "print(mqacheck.__file__)"], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert where.returncode == 0 and str(venv) in where.stdout, where.stdout + where.stderr
    plugin = subprocess.run([str(python), "-m", "pytest", "--help"], capture_output=True, text=True, cwd=tmp_path,
                            env=env)
    assert "--mqa-suite" in plugin.stdout, plugin.stdout[-2000:] + plugin.stderr  # the pytest11 entry point
    adapter = subprocess.run([str(python), "-m", "mqacheck.adapter", "--help"], capture_output=True, text=True,
                             cwd=tmp_path, env=env)
    assert adapter.returncode == 0 and "--convention" in adapter.stdout
