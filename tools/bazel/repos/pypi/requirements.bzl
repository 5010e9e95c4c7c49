"""Offline stand-in for the @pypi hub's requirements.bzl (rules_python 0.8.1 pip_parse).

Online, requirement("keras-hub") is @pypi_keras_hub//:pkg, the package's files fetched by
pip_parse from tools/bazel/requirements_lock.txt. Offline nothing can be fetched, so it is
@pypi//:keras_hub, an empty py_library (BUILD): the package is imported from the site-packages
of the interpreter that tools/bazel/bazel_offline runs the targets with (the one that has the
project's dependencies installed). A name missing from the lock fails here as it would online.
"""

load("//:packages.bzl", "PACKAGES")

def _clean_name(name):
    return name.replace("-", "_").replace(".", "_").lower()

all_requirements = ["@pypi//:" + name for name in PACKAGES]

def requirement(name):
    if _clean_name(name) not in PACKAGES:
        fail("requirement(%r): not in tools/bazel/requirements_lock.txt; pin it in requirements*.txt, " % name +
             "install it and run python tools/bazel/update_requirements_lock.py")
    return "@pypi//:" + _clean_name(name)

def install_deps():
    """The WORKSPACE's install_deps(): offline there are no per-package repositories to declare."""
    pass
