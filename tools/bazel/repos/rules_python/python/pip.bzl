"""Offline stand-in for @rules_python//python:pip.bzl (rules_python 0.8.1).

Offline there is nothing to download. The root WORKSPACE still calls pip_parse(name = "pypi")
and then loads @pypi//:requirements.bzl, which Bazel accepts only if @pypi was declared first;
so pip_parse declares a placeholder repository of that name, which tools/bazel/bazel_offline
replaces (--override_repository=pypi=tools/bazel/repos/pypi) with the stand-in hub, whose
requirement() labels are empty libraries: the packages come from the interpreter's site-packages.
"""

def _placeholder_impl(rctx):
    fail(("@{name} is a placeholder of the offline rules_python stand-in; override it with " +
          "--override_repository={name}=<repository>/tools/bazel/repos/pypi " +
          "(tools/bazel/bazel_offline does)").format(name = rctx.name))

_placeholder = repository_rule(implementation = _placeholder_impl)

def pip_parse(requirements_lock = None, name = "pip_parsed_deps", **kwargs):  # buildifier: disable=unused-variable
    _placeholder(name = name)

def pip_install(requirements = None, name = "pip", **kwargs):  # buildifier: disable=unused-variable
    _placeholder(name = name)

def compile_pip_requirements(**kwargs):  # buildifier: disable=unused-variable
    pass
