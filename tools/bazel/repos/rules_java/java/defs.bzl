"""Offline stand-in for @rules_java//java:defs.bzl.

Bazel 4's own tools (@bazel_tools) load @rules_java, which it would otherwise download from
GitHub even for a pure-Python build. This forwards each rule to the native one built into
Bazel 4, which is all the real rules_java of that era did. tools/bazel/bazel_offline points
@rules_java here with --override_repository.
"""

def java_binary(**kwargs):
    native.java_binary(**kwargs)

def java_import(**kwargs):
    native.java_import(**kwargs)

def java_library(**kwargs):
    native.java_library(**kwargs)

def java_lite_proto_library(**kwargs):
    native.java_lite_proto_library(**kwargs)

def java_package_configuration(**kwargs):
    native.java_package_configuration(**kwargs)

def java_plugin(**kwargs):
    native.java_plugin(**kwargs)

def java_proto_library(**kwargs):
    native.java_proto_library(**kwargs)

def java_runtime(**kwargs):
    native.java_runtime(**kwargs)

def java_test(**kwargs):
    native.java_test(**kwargs)

def java_toolchain(**kwargs):
    native.java_toolchain(**kwargs)
