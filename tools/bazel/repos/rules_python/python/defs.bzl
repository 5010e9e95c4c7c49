"""Offline stand-in for @rules_python//python:defs.bzl (rules_python 0.8.1, Bazel 4).

The real file of that release re-exports Bazel 4's native Python rules and providers; so does
this one, so the root BUILD's targets are the same rules with or without network.
tools/bazel/bazel_offline points @rules_python here with --override_repository.
"""

load("@bazel_tools//tools/python:toolchain.bzl", _py_runtime_pair = "py_runtime_pair")
load("//python/private:reexports.bzl", "internal_PyInfo", "internal_PyRuntimeInfo")

PyInfo = internal_PyInfo
PyRuntimeInfo = internal_PyRuntimeInfo
py_runtime_pair = _py_runtime_pair

def py_library(**attrs):
    native.py_library(**attrs)

def py_binary(**attrs):
    native.py_binary(**attrs)

def py_test(**attrs):
    native.py_test(**attrs)

def py_runtime(**attrs):
    native.py_runtime(**attrs)
