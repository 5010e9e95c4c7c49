"""Bazel builds every target and runs tests, offline (README, "Building and testing with Bazel").

The slow test drives tools/bazel/bazel_offline the way a user does: `build //...`, then `test` on
a few representative py_test targets (a config test, a model test, a data test, one that launches
an entry point as `python -m electra_tf.<name>`), asserting they actually ran and passed. It uses
an output root of its own (no clash with a developer's Bazel server or caches) and shuts its
server down at the end. Without Bazel it is skipped locally but fails under CI, which must
install it (.ci/run: apt-get install bazel-bootstrap).

The fast tests keep the BUILD file and the online path's lock in step with the repository.
"""

import glob
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRAPPER = os.path.join(REPO, "tools", "bazel", "bazel_offline")
# A config test, a model test, a data test, and one that runs `python -m electra_tf.evaluate_squad`.
CHOSEN_TESTS = ["//:test_config", "//:models_test_layers", "//:pretraining_data_test_masking",
                "//:test_evaluate_squad"]
BUILD_TIMEOUT = 900
TEST_TIMEOUT = 1800


def _read(*parts):
    with open(os.path.join(REPO, *parts)) as f:
        return f.read()


def test_build_lists_every_entry_point():
    """BUILD's ENTRY_POINTS (one py_binary each) are exactly the modules that run their main
    under `if __name__ == "__main__":` (absl's app.run through `console.run`)."""
    build = _read("BUILD")
    match = re.search(r"^ENTRY_POINTS = \[(.*?)\]", build, re.S | re.M)
    assert match, "BUILD has no ENTRY_POINTS list"
    listed = set(re.findall(r'"([\w.]+)"', match.group(1)))
    package = os.path.join(REPO, "electra_tf")
    entry_points = {os.path.relpath(path, package)[:-len(".py")].replace(os.sep, ".")
                    .removesuffix(".__main__")  # packages run as python -m
                    for path in glob.glob(os.path.join(package, "**", "*.py"), recursive=True)
                    if re.search(r'^if __name__ == "__main__":\n    console\.run\(main\)',
                                 open(path).read(), re.M)}
    assert listed == entry_points, (f"add to BUILD's ENTRY_POINTS: {sorted(entry_points - listed)}; "
                                    f"remove: {sorted(listed - entry_points)}")


def _pins(name):
    pins = {}
    for raw in _read(name).splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            package, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", package).lower()] = version.strip()
    return pins


def test_build_depends_on_every_runtime_requirement():
    """The library target's requirement() calls cover requirements.txt (the tests get the whole
    lock through all_requirements)."""
    build = _read("BUILD")
    required = {re.sub(r"[-_.]+", "-", name).lower()
                for name in re.findall(r'requirement\("([^"]+)"\)', build)}
    missing = sorted(set(_pins("requirements.txt")) - required)
    assert not missing, f"add to BUILD's RUNTIME_DEPS: {missing}"


def test_bazel_lock_agrees_with_the_pins():
    """tools/bazel/requirements_lock.txt (online pip hub) and the offline hub's package list carry
    every pin of requirements.txt and requirements-dev.txt, at the pinned version."""
    lock = _pins(os.path.join("tools", "bazel", "requirements_lock.txt"))
    packages_bzl = set(re.findall(r'"(\w+)"', _read("tools", "bazel", "repos", "pypi", "packages.bzl")))
    for requirements in ("requirements.txt", "requirements-dev.txt"):
        for package, version in _pins(requirements).items():
            # A local version label (torch 2.13.0+cpu) is the same release.
            assert lock.get(package, "").split("+")[0] == version, (
                f"{requirements} pins {package}=={version}, tools/bazel/requirements_lock.txt has "
                f"{lock.get(package)}: install the pins, then run "
                "python tools/bazel/update_requirements_lock.py")
            assert package.replace("-", "_") in packages_bzl, package


def _bazel_or_skip():
    bazel = os.environ.get("BAZEL", "bazel")
    if shutil.which(bazel):
        return bazel
    message = (f"{bazel} is not installed (apt-get install bazel-bootstrap; "
               "tools/bazel/bazel_offline)")
    if os.environ.get("CI"):
        pytest.fail(f"{message}: CI must run the Bazel build")
    pytest.skip(message)


def _remove_tree(path):
    """Bazel leaves its install base read-only."""
    def make_writable_and_retry(function, failed_path, _):
        os.chmod(os.path.dirname(failed_path), stat.S_IRWXU)
        if os.path.isdir(failed_path):
            os.chmod(failed_path, stat.S_IRWXU)
        function(failed_path)
    shutil.rmtree(path, onerror=make_writable_and_retry)


@pytest.mark.slow
def test_bazel_builds_everything_and_runs_tests_offline(tmp_path_factory):
    bazel = _bazel_or_skip()
    output_root = str(tmp_path_factory.mktemp("bazel_output_root"))
    # Startup options: our own output root; a server that exits by itself if we cannot stop it.
    startup = [f"--output_user_root={output_root}", "--max_idle_secs=300"]
    # No bazel-* convenience symlinks in the checkout; always run the tests, never a cached result.
    env = dict(os.environ, BAZEL=bazel, PYTHON=sys.executable)

    def run(command, *args, timeout):
        result = subprocess.run([WRAPPER, *startup, command, "--symlink_prefix=/", *args],
                                cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        return result, result.stdout + result.stderr

    try:
        result, output = run("build", "//...", timeout=BUILD_TIMEOUT)
        assert result.returncode == 0, output[-6000:]
        assert "Build completed successfully" in output, output[-6000:]
        # Every external repository is a stand-in or Bazel's own local autoconfiguration: nothing
        # was downloaded (the wrapper also forbids downloads outright).
        output_base = subprocess.run(
            [WRAPPER, *startup, "info", "output_base"], cwd=REPO, env=env, capture_output=True,
            text=True, timeout=120).stdout.strip().splitlines()[-1]
        external = {name for name in os.listdir(os.path.join(output_base, "external"))
                    if not name.startswith("@")}
        allowed = {"bazel_tools", "platforms", "local_python", "pypi", "remote_coverage_tools",
                   "rules_cc", "rules_java", "rules_python"}
        assert {name for name in external if not name.startswith("local_config_")} <= allowed, \
            external

        result, output = run("test", "--nocache_test_results", *CHOSEN_TESTS, timeout=TEST_TIMEOUT)
        assert result.returncode == 0, output[-12000:]
        for target in CHOSEN_TESTS:
            assert re.search(rf"^{re.escape(target)}\s+PASSED in", output, re.M), output[-6000:]
        count = len(CHOSEN_TESTS)
        assert f"Executed {count} out of {count} tests: {count} tests pass." in output, \
            output[-6000:]
    finally:
        subprocess.run([WRAPPER, *startup, "shutdown"], cwd=REPO, env=env, capture_output=True,
                       timeout=120)
        _remove_tree(output_root)
