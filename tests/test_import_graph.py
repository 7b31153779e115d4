"""The package's import graph: no circles, and no import from a lower layer up (read with ``ast``, nothing imported).

Every import statement counts, wherever it is: at the top, inside a function (a lazy import) or under
``TYPE_CHECKING``. ``from package import name`` is an import of the module ``package.name`` when there is one, else of
``package``. A package's ``__init__`` is a module like any other; importing a submodule is not counted as importing
its package's ``__init__`` (as grimp counts it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "whisper_subtitler"

# Top to bottom: a module may import from its own layer and the layers below it, never from one above. A module
# belongs to the layer of the longest prefix that names it (a package name covers its modules).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__", "cli"),  # the command line: flags in, text out
    ("serve",),  # the HTTP server (whisper-subtitler serve) on the Python API
    ("", "api", "options", "executors"),  # the Python API and its option objects; Ray's workers
    (
        "pipeline",
        "runner",
        "progress",
        "reformat",
        "doctor",
        "align",
        "video",
        "models.holder",
        "quality",
        "library",
        "narratives",
    ),  # runs, files
    (  # the stages and what they exchange
        "transcription",
        "diarize",
        "speakers",
        "voices",
        "cues",
        "writers",
        "outputs",
        "pieces",
        "prefetch",
        "audio",
        "channels",
        "streams",
        "inputs",
        "stages",
        "results",
        "interrupts",
    ),
    ("platform", "models"),  # the machine and the model files
    ("decoding", "vad", "vad_network"),  # openai-whisper's batched decoding (chunks, budgets, kernels); the VAD
    ("compat",),  # other libraries' internals: every patch of openai-whisper and torch, checked against their versions
    ("types", "errors", "languages", "cache", "version"),  # values, failures, constants
)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name, relative to the package (``""`` is its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, known: dict[str, Path]) -> str | None:
    """The package's module that an import of the absolute ``name`` loads (the nearest existing one), or None."""
    if name != "whisper_subtitler" and not name.startswith("whisper_subtitler."):
        return None
    module = name.removeprefix("whisper_subtitler").removeprefix(".")
    while module not in known:
        module = module.rpartition(".")[0]
    return module


def imports_of(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules that ``module`` (at ``path``) imports anywhere in its code."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per dot after the first
                parts = ["whisper_subtitler", *filter(None, package.split("."))]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t if imported(t, known) == t.removeprefix("whisper_subtitler.") else base for t in targets]
        else:
            continue
        for target in targets:
            found = imported(target, known)
            if found is not None and found != module:
                yield found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {module: set(imports_of(module, path, known)) for module, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
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
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer_of(module: str) -> int:
    """The index of ``module``'s layer in ``LAYERS`` (0 is the top); raises ``LookupError`` when none names it."""
    matches = [
        (len(prefix), number)
        for number, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or (prefix and module.startswith(prefix + "."))
    ]
    if not matches:
        raise LookupError(f"whisper_subtitler.{module} is in no layer: add it to LAYERS in {__file__}")
    return max(matches)[1]


def test_the_reader_sees_known_imports():
    edges = graph()
    assert "pipeline" in edges["api"] and "options" in edges["api"]
    assert "cli.console" in edges["cli.align"]  # a relative-free from-import of a submodule
    assert "decoding.decode" in edges["transcription.chunk_transcriber"]  # `from ...decoding import decode`
    assert "transcription.tuning" in edges["transcription.batched"]
    assert "diarize.load" in edges["diarize"]  # lazy imports inside functions count
    assert "api" in edges[""]  # so do those under TYPE_CHECKING


def test_no_import_circles():
    assert circles(graph()) == []


def test_a_circle_would_be_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_has_a_layer_and_no_import_runs_up():
    edges = graph()
    upward = [
        f"whisper_subtitler.{module} (layer {layer_of(module)}) imports whisper_subtitler.{target} "
        f"(layer {layer_of(target)})"
        for module, targets in sorted(edges.items())
        for target in sorted(targets)
        if layer_of(target) < layer_of(module)
    ]
    assert upward == []


def test_layers_name_each_prefix_once():
    prefixes = [prefix for layer in LAYERS for prefix in layer]
    assert len(prefixes) == len(set(prefixes))
