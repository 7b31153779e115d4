"""MkDocs hook: the CLI reference page rendered from the Typer app at build time, and links out of ``docs/``.

- A page holding the line ``<!-- cli-reference -->`` gets it replaced by every command's help: the usage line,
  the description, one table per help panel (each option as ``--help`` shows it, with its default) and the epilog,
  read from ``typer.main.get_command(app)``. The app is ``extra.cli_app`` of ``mkdocs.yml`` (``module:attribute``).
  The page cannot drift from the command line: it is made from the same objects ``--help`` prints.
- A relative link that leaves ``docs/`` (a record in ``bench/records/``, a lab note, the Makefile) names a file of the
  repository, not of the site. Such a link must name an existing file (a missing one fails the build); on the site
  it becomes a link into ``repo_url`` when ``mkdocs.yml`` sets one, else the file's path in code. On GitHub the
  Markdown keeps the plain relative link.
"""

from __future__ import annotations

import importlib
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.hooks.cli_reference")

MARKER = "<!-- cli-reference -->"
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[`~]*[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
INLINE_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(\s*<?([^)\s>]+)>?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
DEFAULT_PANEL = "Options"


def load_app(spec: str) -> Any:
    """The Typer application named ``module:attribute``."""
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute or "app")


def escape(text: str) -> str:
    """``text`` safe in a Markdown table cell: code spans kept, the rest with Markdown's specials escaped."""
    out = []
    last = 0
    for m in CODE_SPAN.finditer(text):
        out.append(_escape_prose(text[last : m.start()]))
        out.append(m.group(0).replace("|", "\\|"))
        last = m.end()
    out.append(_escape_prose(text[last:]))
    return "".join(out).replace("\n", " ")


def _escape_prose(text: str) -> str:
    text = text.replace("\\", "\\\\")
    for char in "|*_[]":
        text = text.replace(char, "\\" + char)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _context(command: Any, name: str, parent: Any | None) -> Any:
    """A context for ``command`` as the command line makes one (the Typer app's own Click, vendored or not)."""
    return type(parent)(command, info_name=name, parent=parent) if parent is not None else None


def _panel(param: Any) -> str:
    panel = getattr(param, "rich_help_panel", None)
    if panel:
        return panel
    return "Arguments" if getattr(param, "param_type_name", "") == "argument" else DEFAULT_PANEL


def command_markdown(command: Any, ctx: Any, path: list[str], level: int) -> list[str]:
    """The Markdown of one command (and of the commands of a group, one level down)."""
    lines = [f"{'#' * level} `{' '.join(path)}`", ""]
    if command.help:
        lines += [escape(command.help.strip()), ""]
    lines += ["```text", command.get_usage(ctx).strip(), "```", ""]
    panels: dict[str, list[tuple[str, str]]] = {}
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            opts = " / ".join([*param.opts, *param.secondary_opts]) or param.name
            record = (opts, getattr(param, "help", None) or "")
        panels.setdefault(_panel(param), []).append(record)
    for panel, records in panels.items():
        kind = "argument" if panel == "Arguments" else "option"
        lines += [f"**{escape(panel)}**", "", f"| {kind} | meaning |", "|---|---|"]
        lines += [f"| `{opts.replace('|', '&#124;')}` | {escape(help_text)} |" for opts, help_text in records]
        lines.append("")
    subcommands = getattr(command, "commands", None) or {}
    if subcommands:
        lines += ["| command | what it does |", "|---|---|"]
        for name, sub in subcommands.items():
            if not getattr(sub, "hidden", False):
                lines.append(f"| `{' '.join([*path, name])}` | {escape(sub.get_short_help_str(limit=200))} |")
        lines.append("")
    if command.epilog:
        lines += [escape(command.epilog.strip()), ""]
    for name, sub in subcommands.items():
        if not getattr(sub, "hidden", False):
            lines += command_markdown(sub, _context(sub, name, ctx), [*path, name], level + 1)
    return lines


def cli_reference(spec: str) -> str:
    """The reference of every command of the Typer app ``spec``, as Markdown."""
    import typer.main

    app = load_app(spec)
    root = typer.main.get_command(app)
    name = getattr(app.info, "name", None) or root.name or "app"
    context_class = getattr(root, "context_class", None)
    if context_class is None:  # pragma: no cover - every Click command has one
        raise PluginError("the CLI app's command has no context class")
    ctx = context_class(root, info_name=name)
    return "\n".join(command_markdown(root, ctx, [name], 2))


def _outside_links(markdown: str, page_dir: Path, docs_dir: Path, root: Path, repo_url: str | None) -> str:
    """``markdown`` with its relative links that leave ``docs_dir`` made into repository links or paths."""

    def replace(m: re.Match[str]) -> str:
        text, target = m.group(1), m.group(2)
        if SCHEME.match(target) or target.startswith(("#", "/")):
            return m.group(0)
        path, _, fragment = target.partition("#")
        resolved = (page_dir / path).resolve()
        if resolved.is_relative_to(docs_dir.resolve()):
            return m.group(0)
        if not resolved.exists():
            raise PluginError(f"a link leaves docs/ for a file the repository lacks: {target}")
        repo_path = resolved.relative_to(root.resolve()).as_posix()
        if repo_url:
            anchor = f"#{fragment}" if fragment else ""
            return f"[{text}]({repo_url.rstrip('/')}/blob/main/{repo_path}{anchor})"
        if text.strip("`") == repo_path:
            return f"`{repo_path}`"
        return f"{text} (`{repo_path}`)"

    out = []
    last = 0
    protected = sorted(
        [(m.start(), m.end()) for m in FENCE.finditer(markdown)]
        + [(m.start(), m.end()) for m in CODE_SPAN.finditer(FENCE.sub(lambda f: " " * len(f.group(0)), markdown))]
    )
    for start, end in protected:
        if start < last:
            continue
        out.append(INLINE_LINK.sub(replace, markdown[last:start]))
        out.append(markdown[start:end])
        last = end
    out.append(INLINE_LINK.sub(replace, markdown[last:]))
    return "".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER in markdown:
        spec = (config.extra or {}).get("cli_app")
        if not spec:
            raise PluginError("mkdocs.yml: extra.cli_app (module:attribute of the Typer app) is not set")
        markdown = markdown.replace(MARKER, cli_reference(spec))
        log.info("CLI reference rendered from %s into %s", spec, page.file.src_uri)
    docs_dir = Path(config.docs_dir)
    root = Path(config.config_file_path).parent
    page_dir = Path(page.file.abs_src_path).parent
    return _outside_links(markdown, page_dir, docs_dir, root, config.repo_url)
