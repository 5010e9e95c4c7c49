"""The package outside the repository: sdist -> wheel -> a fresh virtual environment, where the
no-flag pretraining demo runs from an empty directory with the recipes the wheel carries.

No network: the wheel is built with the installed setuptools and installed with --no-deps into a
venv that reuses this interpreter's packages (--system-site-packages: TensorFlow and the rest).
That site-packages may also hold an editable install of electra_tf pointing at the checkout; the
venv's own site-packages comes first on sys.path, and setuptools' editable finder is appended
after the path-based one, so the venv's copy wins as long as neither PYTHONPATH nor the working
directory puts the checkout first: the subprocesses run without PYTHONPATH, from empty
directories, and the test asserts which copy was imported.
"""

import glob
import json
import os
import site
import subprocess
import sys
import tarfile

import pytest

from tests.run_helpers import REPO

pytestmark = pytest.mark.slow


def _run(args, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{args}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    return result


def _build_wheel(out_dir) -> str:
    """sdist of the checkout, then the wheel from the sdist (what `pip install <sdist>` does;
    also keeps build/ out of the checkout). Returns the wheel's path."""
    sdist = _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                  "print(build_meta.build_sdist(sys.argv[1]))", str(out_dir)],
                 cwd=REPO).stdout.strip().splitlines()[-1]
    with tarfile.open(os.path.join(out_dir, sdist)) as archive:
        assert any(name.endswith("/configs/pretrain/demo.yaml") for name in archive.getnames())
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--no-cache-dir", "-w", str(out_dir), os.path.join(out_dir, sdist)], cwd=out_dir)
    wheels = glob.glob(os.path.join(out_dir, "electra_tf-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _make_venv(venv) -> str:
    """A venv that sees this interpreter's packages; returns its python. --system-site-packages
    reaches the base interpreter's; when the tests themselves run in a virtualenv, its
    site-packages are added by a .pth file, after the venv's own (the wheel still wins)."""
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
         cwd=os.path.dirname(venv))
    if sys.prefix != sys.base_prefix:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        with open(os.path.join(venv, "lib", version, "site-packages", "outer_venv.pth"), "w") as f:
            f.write("".join(path + "\n" for path in site.getsitepackages()))
    return os.path.join(venv, "bin", "python")


def test_wheel_installs_and_pretrains_from_an_empty_directory(tmp_path):
    if not all(os.path.isfile(os.path.join(REPO, f)) for f in ("pyproject.toml", "setup.py")):
        pytest.skip("not a source checkout (e.g. Bazel runfiles): nothing to build a wheel from")
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    for directory in (dist, work):
        directory.mkdir()
    wheel = _build_wheel(dist)

    python = _make_venv(venv)
    # The venv has no pip of its own; the system's, run by the venv's python, installs into it.
    # --ignore-installed: a non-editable electra_tf of the same version visible from the venv
    # would otherwise make pip skip the install.
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", wheel],
         cwd=work)
    where = json.loads(_run([python, "-c", "import json, electra_tf, electra_tf.config as c; "
                             "print(json.dumps([electra_tf.__file__, c.CONFIG_DIR]))"],
                            cwd=work).stdout)
    package_dir = os.path.dirname(where[0])
    assert package_dir.startswith(str(venv)) and "site-packages" in package_dir, where
    assert where[1] == os.path.join(package_dir, "configs"), where
    for recipe in ("pretrain/demo.yaml", "pretrain/ablations/mlm.yaml", "finetune/demo.yaml",
                   "model/tiny.yaml"):
        assert os.path.isfile(os.path.join(where[1], recipe)), recipe

    result = _run([python, "-m", "electra_tf.run_pretraining", "--train_steps", "2"], cwd=work,
                  timeout=600)
    run_dir = work / "runs" / "electra_demo"
    assert "finished at step 2" in result.stdout, result.stdout
    assert (run_dir / "config.yaml").is_file()
    assert glob.glob(str(run_dir / "checkpoints" / "ckpt-2.index")), os.listdir(run_dir)
    assert sorted(os.listdir(work)) == ["runs"]  # nothing written beside the run directory
