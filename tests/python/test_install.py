"""The package as scripts/install-python.sh installs it, used on its own: a clean environment (no
SIEVE_CLI, no build tree on PYTHONPATH) finds the package's own sieve executable, and the install
leaves nothing behind in the source tree. The slowest test here (a pip install: about 15 s)."""
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("SIEVE_CLI", "build/sieve")


@pytest.mark.slow
def test_installed_package_works_on_its_own(tmp_path):
    build = os.environ.get("SIEVE_BUILD_DIR")
    if not build:
        pytest.skip("SIEVE_BUILD_DIR is not set (ctest sets it)")
    model = str(tmp_path / "model")
    subprocess.run([CLI, "make-fixture", "--out", model, "--seed", "5"], check=True, capture_output=True)
    target = tmp_path / "site"
    env = dict(os.environ, SIEVE_BUILD_DIR=build)
    r = subprocess.run([os.path.join(REPO, "scripts", "install-python.sh"), "-q", "--target", str(target)],
                       env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    for leftover in ("python/build", "python/sieve.egg-info"):
        assert not os.path.exists(os.path.join(REPO, leftover)), leftover + " was left in the source tree"
    pkg = target / "sieve"
    assert (pkg / "__init__.pyi").exists() and (pkg / "py.typed").exists()
    clean = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(target), "HOME": str(tmp_path)}
    code = ("import sieve, sys; print(sieve.__file__); print(sieve.train.cli_path()); "
            "print(sieve.Encoder.load(sys.argv[1]).dim)")
    out = subprocess.run(["/usr/bin/python3", "-c", code, model], capture_output=True, text=True, env=clean,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == [str(pkg / "__init__.py"), str(pkg / "bin" / "sieve")], out.stdout + out.stderr
    assert int(lines[2]) > 0
    help_run = subprocess.run([lines[1], "--help"], capture_output=True, text=True, env=clean, cwd=str(tmp_path))
    assert help_run.returncode == 0 and "search" in help_run.stdout, help_run.stdout + help_run.stderr
