"""Entry point of the Bazel py_test targets: runs pytest on the arguments (a test file)."""

import sys

import pytest

if __name__ == "__main__":
    sys.exit(pytest.main(sys.argv[1:]))
