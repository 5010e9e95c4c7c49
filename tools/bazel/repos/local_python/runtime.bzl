"""A py_runtime whose interpreter is given on the command line: --define=local_python=/abs/path.

A native py_runtime needs the interpreter's absolute path written in the BUILD file, and Bazel 4
ignores --python_path once Python toolchains are on (its default). This rule reads the path from
--define instead, so tools/bazel/bazel_offline can run every target with the interpreter that
has the project's dependencies (python3 on PATH, or $PYTHON), resolved to its real executable.
"""

def _local_python_runtime_impl(ctx):
    path = ctx.var.get("local_python", "")
    if not path.startswith("/"):
        fail("--define=local_python=/absolute/path/to/python3 is required by " +
             "@local_python//:python_toolchain (tools/bazel/bazel_offline passes it)")
    return [PyRuntimeInfo(
        interpreter_path = path,
        python_version = "PY3",
        # The launcher stub is itself Python; run it with the same interpreter rather than
        # whatever `python3` the (reduced) test PATH finds.
        stub_shebang = "#!" + path,
    )]

local_python_runtime = rule(
    implementation = _local_python_runtime_impl,
    doc = "PyRuntimeInfo for the interpreter at --define=local_python=<absolute path>.",
)
