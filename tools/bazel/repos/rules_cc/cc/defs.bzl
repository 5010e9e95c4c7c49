"""Offline stand-in for @rules_cc//cc:defs.bzl.

Bazel 4's own tools (@bazel_tools) load @rules_cc, which it would otherwise download from GitHub
even for a pure-Python build. Debian's bazel-rules-cc is too new for Bazel 4, so this forwards
each rule to the native one built into Bazel 4, which is all the real rules_cc of that era did.
tools/bazel/bazel_offline points @rules_cc here with --override_repository.
"""

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_proto_library(**kwargs):
    native.cc_proto_library(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)

def fdo_prefetch_hints(**kwargs):
    native.fdo_prefetch_hints(**kwargs)

def fdo_profile(**kwargs):
    native.fdo_profile(**kwargs)

def objc_import(**kwargs):
    native.objc_import(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)
