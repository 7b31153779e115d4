"""The user guide as a site: it builds with ``mkdocs build --strict``, every page is in its navigation, ``docs/`` says
what the tool does now (no dated entries, no issue or session numbers: those are lab notes, ``bench/notes/``), and the
commands the pages show are the command line's own.

The site needs mkdocs and mkdocs-material, which the test extras install (``make install-test``); without them these
tests fail rather than skip, so that CI builds the site on every run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)\n(.*?)^ {0,3}\1[`~]*[ \t]*$", re.MULTILINE | re.DOTALL)
TITLE = re.compile(r"""\btitle\s*=\s*["']([^"']+)["']""")
RUN_MARKER = "<!-- tests/test_docs_site.py runs this example"
# `whisper-subtitler ...` where a shell would run it: at the start of a line (after a prompt, `exec`, `ExecStart=`
# or a path to the script) or after a pipe.
CALL = re.compile(r"(?:^|\|\s*|\bexec\s+|ExecStart=)(?:\S*/)?whisper-subtitler((?:[ \t]+[^\s#|;&>]+)*)", re.MULTILINE)
DATED = [
    (re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])"), "an ISO date"),
    (re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE), "an issue number"),
    (re.compile(r"\bsessions?\s+\d+", re.IGNORECASE), "a session number"),
    (re.compile(r"\bmeasured and not kept\b", re.IGNORECASE), "a lab story"),
]


def pages() -> list[Path]:
    """Every Markdown page of the site (``docs/hooks/`` holds the build's code, not pages)."""
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)


def require_mkdocs() -> None:
    missing = [name for name in ("mkdocs", "material") if importlib.util.find_spec(name) is None]
    assert not missing, f"{', '.join(missing)} missing: install the test extras (make install-test)"


def nav_pages(nav) -> list[str]:
    """The page paths of an mkdocs ``nav``, in order."""
    out: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            out += nav_pages(value)
        elif isinstance(value, str) and not re.match(r"^[a-z]+://", value):
            out.append(value)
    return out


def dated(text: str) -> list[str]:
    """What in ``text`` belongs in the lab notes: ISO dates, issue and session numbers, each with its line."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in DATED:
            found += [f"line {number}: {what}: {m.group(0)!r}" for m in pattern.finditer(line)]
    return found


def test_the_site_builds_strict_with_the_cli_reference(tmp_path):
    require_mkdocs()
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(CONFIG), "-d", str(site)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "index.html").is_file()
    reference = (site / "cli" / "index.html").read_text(encoding="utf-8")
    import typer.main

    from whisper_subtitler.cli import app

    root = typer.main.get_command(app)
    for name, command in root.commands.items():
        assert f"whisper-subtitler {name}" in reference, name
        for sub in getattr(command, "commands", {}):
            assert f"whisper-subtitler {name} {sub}" in reference, (name, sub)
    assert "--max-line-width" in reference and "--speaker-style" in reference


def test_every_page_is_in_the_nav():
    require_mkdocs()
    from mkdocs.config import load_config

    config = load_config(str(CONFIG))
    listed = nav_pages(config["nav"])
    assert len(listed) == len(set(listed)), "a page is in the nav twice"
    assert sorted(listed) == sorted(p.relative_to(DOCS).as_posix() for p in pages())


def test_the_accuracy_page_is_in_the_guide():
    require_mkdocs()
    from mkdocs.config import load_config

    assert "accuracy.md" in nav_pages(load_config(str(CONFIG))["nav"])


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_say_what_the_tool_does_now(page):
    # Dated entries, issue and session numbers are the history of a figure: bench/notes/ keeps it, git keeps the rest.
    assert dated(page.read_text(encoding="utf-8")) == []


def test_the_history_reader_finds_dates_issues_and_sessions():
    text = (
        "Measured 2026-11-25 on two cores (issue 48, Session 21).\n"
        "A record: benchmarks-2026-11-29.json; a version 20250625; 10-20-30 s.\n"
        "What was measured and not kept: sessions 13-17.\n"
    )
    assert dated(text) == [
        "line 1: an ISO date: '2026-11-25'",
        "line 1: an issue number: 'issue 48'",
        "line 1: a session number: 'Session 21'",
        "line 3: a session number: 'sessions 13'",
        "line 3: a lab story: 'measured and not kept'",
    ]


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """``(offset, info string, body)`` of every fenced code block of ``text``."""
    return [(m.start(), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(text)]


def shown_commands() -> list[tuple[str, str]]:
    """``(page, arguments)`` of every ``whisper-subtitler`` command the README and the guide show in code blocks."""
    out = []
    for page in [ROOT / "README.md", *pages()]:
        for _, _, body in fenced_blocks(page.read_text(encoding="utf-8")):
            for line in body.splitlines():
                line = line.strip()
                line = line[2:] if line.startswith("$ ") else line
                out += [(page.relative_to(ROOT).as_posix(), m.group(1).strip()) for m in CALL.finditer(line)]
    return out


def test_the_pages_show_commands():
    commands = shown_commands()
    assert len(commands) > 80
    named = {args.split()[0] for _, args in commands if args}
    assert {"transcribe", "format", "check", "align", "watch", "serve", "voices", "queue", "doctor"} <= named


def test_every_command_and_flag_the_pages_show_exists():
    import typer.main

    from whisper_subtitler.cli import app

    root = typer.main.get_command(app)

    def flags(command) -> set[str]:
        names = {"--help"}
        for param in command.params:
            names.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("-"))
        return names

    unknown = []
    for page, args in shown_commands():
        call = f"whisper-subtitler {args}"
        tokens = args.split()
        command, path = root, ["whisper-subtitler"]
        while tokens and getattr(command, "commands", None) and tokens[0] in command.commands:
            command = command.commands[tokens[0]]
            path.append(tokens.pop(0))
        if command is root and tokens and not tokens[0].startswith("-"):
            unknown.append(f"{page}: {call}: no command {tokens[0]!r}")
            continue
        known = flags(command)
        if command is root:
            known |= {"--version", "--install-completion", "--show-completion"}
        for token in tokens:
            flag = token.split("=", 1)[0]
            if flag.startswith("-") and flag != "-" and not flag.startswith("-v") and flag not in known:
                unknown.append(f"{page}: {call}: {' '.join(path)} has no {flag}")
    assert unknown == []


def examples() -> list[tuple[Path, dict[str, str], str]]:
    """The examples the pages mark as run by this test: ``(page, files the page shows, console block)``."""
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        blocks = fenced_blocks(text)
        files = {m.group(1): body for _, info, body in blocks if (m := TITLE.search(info))}
        for offset, info, body in blocks:
            if info.split()[:1] == ["console"] and text[:offset].rstrip().endswith("-->"):
                marker = text[:offset].rstrip().rsplit("<!--", 1)[-1]
                if marker.strip().startswith(RUN_MARKER[5:].strip()):
                    out.append((page, files, body))
    return out


def test_a_page_marks_an_example_to_run():
    assert [page.name for page, _, _ in examples()] == ["check.md"]


@pytest.mark.parametrize("page,files,block", examples(), ids=lambda v: v.name if isinstance(v, Path) else "")
def test_the_examples_give_the_output_the_pages_show(page, files, block, tmp_path):
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
    lines = block.splitlines()
    assert lines and lines[0].startswith("$ whisper-subtitler "), lines[:1]
    args = shlex.split(lines[0][len("$ whisper-subtitler ") :])
    shown = "\n".join(lines[1:]).rstrip()
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-m", "whisper_subtitler", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stdout.rstrip() == shown, f"{page.name}: the example's output changed:\n{proc.stdout}"
