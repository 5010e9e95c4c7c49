"""Bazel 4's built-in Python providers under other names, so defs.bzl can export them as
PyInfo / PyRuntimeInfo (a .bzl file cannot assign a global to a builtin of the same name)."""

internal_PyInfo = PyInfo
internal_PyRuntimeInfo = PyRuntimeInfo
