"""The package's layers hold: no import circles, no upward imports, only the layers each row may
use, reasons for late imports.

The layers are declared once, in the table of docs/architecture.md; this test reads it and every
module of `electra_tf` with `ast` (imports inside functions included).
"""

import ast
import fnmatch
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "electra_tf"
DOC = ROOT / "docs" / "architecture.md"

# Third-party packages heavy enough to import only on the paths that need them.
HEAVY = {"tensorflow", "keras", "keras_hub", "tensorflow_datasets", "tensorflow_text", "torch",
         "transformers", "matplotlib", "tokenizers", "sentencepiece", "safetensors",
         "onnxruntime", "scipy", "sklearn", "seqeval", "tf_keras"}
LAZY_REASON = re.compile(r"#\s*lazy:\s*\S")


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _declared_layers() -> list[tuple[str, list[str], set[str] | None]]:
    """[(layer, [module patterns relative to electra_tf], {layers it may use} or None for every
    layer below it)], bottom layer first."""
    text = DOC.read_text()
    table = text.split("<!-- layers: bottom first -->")[1].split("<!-- end layers -->")[0]
    layers = []
    for line in table.strip().splitlines()[2:]:  # skip the header and its rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        may_use = None if cells[3] == "every layer" else set(re.findall(r"`([^`]+)`", cells[3]))
        layers.append((cells[0], re.findall(r"`([^`]+)`", cells[1]), may_use))
    return layers


LAYERS = _declared_layers()


def _layer_of(module: str) -> int | None:
    """Index of the layer whose most specific pattern claims `module`."""
    relative = "__init__" if module == "electra_tf" else module[len("electra_tf."):]
    best, best_specificity = None, -1
    for index, (_, patterns, _) in enumerate(LAYERS):
        for pattern in patterns:
            exact = pattern == relative
            inside = pattern.endswith(".*") and (
                relative == pattern[:-2] or fnmatch.fnmatch(relative, pattern))
            if exact or inside:
                specificity = len(pattern) + (1000 if exact else 0)
                if specificity > best_specificity:
                    best, best_specificity = index, specificity
    return best


def _resolve(name: str) -> str | None:
    """The package module an import of `name` loads (its longest existing prefix)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


class _Import:
    """One imported name; `block_start` is the first line of its run of import statements."""

    def __init__(self, module, target, node, in_function, block_start):
        self.module, self.target, self.node = module, target, node
        self.in_function, self.block_start = in_function, block_start


def _imports(module: str, path: pathlib.Path) -> list[_Import]:
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def add(node, in_function, block_start):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(_Import(module, alias.name, node, in_function, block_start))
            return
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join(parts + ([base] if base else []))
        for alias in node.names:  # `from pkg import submodule` imports the submodule
            full = f"{base}.{alias.name}"
            found.append(_Import(module, full if full in MODULES else base, node, in_function,
                                 block_start))

    def visit(node, in_function):
        block_start = None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                block_start = block_start or child.lineno
                add(child, in_function, block_start)
            else:
                block_start = None
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            visit(child, inside)

    visit(tree, False)
    return found


IMPORTS = [i for module, path in MODULES.items() for i in _imports(module, path)]


def _edges() -> dict[str, set[str]]:
    edges = {module: set() for module in MODULES}
    for i in IMPORTS:
        target = _resolve(i.target) if i.target.startswith("electra_tf") else None
        if target and target != i.module:
            edges[i.module].add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return components


def test_the_architecture_doc_declares_the_layers():
    names = [name for name, _, _ in LAYERS]
    assert names[0] == "foundation" and names[-1] == "commands" and len(names) >= 8
    assert all(patterns for _, patterns, _ in LAYERS)
    for index, (name, _, may_use) in enumerate(LAYERS):  # what a row may use lies below it
        assert may_use is None or may_use <= set(names[:index]), (name, may_use)


def test_every_module_belongs_to_a_declared_layer():
    unclaimed = sorted(m for m in MODULES if _layer_of(m) is None)
    assert not unclaimed, f"add these modules to a layer in docs/architecture.md: {unclaimed}"


def test_every_declared_pattern_claims_a_module():
    for layer, patterns, _ in LAYERS:
        for pattern in patterns:
            prefix = "electra_tf" if pattern == "__init__" else f"electra_tf.{pattern}"
            assert any(m == prefix.removesuffix(".*") or fnmatch.fnmatch(m, prefix)
                       for m in MODULES), f"{layer}: `{pattern}` names no module"


def test_no_import_circles():
    cycles = _cycles(_edges())
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_import_from_a_lower_layer_into_a_higher_one():
    upward = []
    for module, targets in _edges().items():
        for target in targets:
            if _layer_of(target) > _layer_of(module):
                upward.append(f"{module} ({LAYERS[_layer_of(module)][0]}) imports {target} "
                              f"({LAYERS[_layer_of(target)][0]})")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


def test_each_layer_imports_only_the_layers_its_row_may_use():
    outside = []
    for module, targets in _edges().items():
        name, _, may_use = LAYERS[_layer_of(module)]
        for target in targets:
            used = LAYERS[_layer_of(target)][0]
            if may_use is not None and used != name and used not in may_use:
                outside.append(f"{module} ({name}) imports {target} ({used})")
    assert not outside, ("imports from layers the row's \"may use\" does not list "
                         "(docs/architecture.md):\n" + "\n".join(sorted(outside)))


def _late_import_without_reason(i: _Import, lines: list[str]) -> bool:
    if i.target.split(".")[0] in HEAVY:
        return False
    # The reason stands on the line above the run of imports, or on one of its lines.
    nearby = lines[i.block_start - 2:i.node.end_lineno]
    return not any(LAZY_REASON.search(line) for line in nearby)


def test_imports_inside_functions_say_why():
    missing = []
    for module, path in MODULES.items():
        lines = path.read_text().splitlines()
        for i in _imports(module, path):
            if i.in_function and _late_import_without_reason(i, lines):
                missing.append(f"{path.relative_to(ROOT)}:{i.node.lineno} imports {i.target}")
    assert not missing, ("imports inside functions need a `# lazy: <reason>` comment (or move "
                         "them to the top of the module):\n" + "\n".join(missing))


@pytest.mark.parametrize("source, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_the_circle_finder_finds_circles(source, expected):
    assert _cycles(source) == expected
