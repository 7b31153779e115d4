"""``whisper-subtitler voices``: the voice library (``whisper_subtitler.voices``) from the command line.

    voices add NAME FILE... [--start S --end E]... [--replace]   enrol a voice from clips of it
    voices list [--json]                                          the voices, their clips and seconds of speech
    voices remove NAME
    voices export FILE [--overwrite]                              the library as one file to share
    voices import FILE [--replace]                                voices from such a file

Every command takes ``--voices-dir`` (default ``$XDG_DATA_HOME/whisper-subtitler/voices``). A failure prints one
line on stderr (and a hint) and leaves the library as it was; exit codes in :data:`VOICES_EXIT_CODES`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from whisper_subtitler.cli.console import err, fail, setup_logging
from whisper_subtitler.errors import SubtitlerError, UsageError

VOICES_EXIT_CODES = (
    "Exit codes: 0 done; 2 usage error or a clip that cannot be enrolled (unreadable, empty, no speech, several "
    "voices), a name already present (without --replace) or unknown; 3 the library file cannot be used (corrupt, "
    "a newer version, embeddings of another model) or a requirement is missing (ffmpeg, the diarization models). "
    "The library is unchanged whenever the exit code is not 0."
)

voices_app = typer.Typer(
    name="voices",
    help="The voice library: enrol people's voices so that --voices names them in transcripts.",
    epilog=VOICES_EXIT_CODES,
    no_args_is_help=True,
)

VoicesDir = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--voices-dir",
        help="The library's folder (default: $XDG_DATA_HOME/whisper-subtitler/voices, ~/.local/share/...).",
        show_default=False,
        file_okay=False,
    ),
]
Verbose = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log lines on stderr.")]


def _run(action) -> None:
    """``action()``; a ``SubtitlerError`` becomes its one line on stderr and its exit code."""
    try:
        action()
    except SubtitlerError as error:
        raise fail(error) from None


def clip_ranges(files: list[Path], starts: list[float], ends: list[float]) -> list[tuple[Path, object]]:
    """``(file, ClipRange)`` per clip: each file whole without ``--start``/``--end``; with one file, one clip per
    range; with several files, one range per file, in order. ``--start`` and ``--end`` are each given for every
    range or not at all. Raises UsageError otherwise."""
    from whisper_subtitler.voices.enrol import ClipRange

    count = max(len(starts), len(ends))
    if (starts and len(starts) != count) or (ends and len(ends) != count):
        raise UsageError("give --start and --end the same number of times (or only one of them, for every clip)")
    if count == 0:
        return [(f, ClipRange()) for f in files]
    ranges = [ClipRange(starts[k] if starts else None, ends[k] if ends else None) for k in range(count)]
    if len(files) == 1:
        return [(files[0], r) for r in ranges]
    if len(files) != count:
        raise UsageError(f"{len(files)} files and {count} --start/--end ranges: give one range per file, or none")
    return list(zip(files, ranges))


@voices_app.command("add", epilog=VOICES_EXIT_CODES)
def add(
    name: Annotated[str, typer.Argument(help="The person's name, as subtitles will show it.")],
    files: Annotated[list[Path], typer.Argument(help="Clips of this person speaking alone (audio or video).")],
    start: Annotated[
        Optional[list[float]],  # noqa: UP045
        typer.Option("--start", help="Where a clip starts in its file, seconds (repeatable).", show_default=False),
    ] = None,
    end: Annotated[
        Optional[list[float]],  # noqa: UP045
        typer.Option("--end", help="Where a clip ends in its file, seconds (repeatable).", show_default=False),
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a voice of this name.")] = False,
    voices_dir: VoicesDir = None,
    verbose: Verbose = 0,
) -> None:
    """Enrol NAME's voice from one or more clips (each checked: speech, one voice), into the library."""
    from whisper_subtitler.voices.enrol import add_voice
    from whisper_subtitler.voices.library import library_path

    setup_logging(verbose, quiet=False)

    def action() -> None:
        clips = clip_ranges(files, start or [], end or [])
        voice = add_voice(name, clips, voices_dir, replace_existing=replace)  # type: ignore[arg-type]
        err.print(
            f"enrolled {voice.name}: {len(voice.clips)} clip(s), {voice.seconds:.1f} s of speech "
            f"({library_path(voices_dir)})",
            highlight=False,
            soft_wrap=True,
        )

    _run(action)


@voices_app.command("list", epilog=VOICES_EXIT_CODES)
def list_voices(
    json_output: Annotated[bool, typer.Option("--json", help="Print the voices as JSON on stdout.")] = False,
    voices_dir: VoicesDir = None,
) -> None:
    """List the enrolled voices (stdout): name, clips, seconds of speech."""
    from whisper_subtitler.voices.embed import identity
    from whisper_subtitler.voices.library import library_path, read_library

    def action() -> None:
        path = library_path(voices_dir)
        library = read_library(path, identity())
        if json_output:
            listing = {
                "library": str(path),
                "model": dict(library.model),
                "voices": [
                    {
                        "name": v.name,
                        "seconds": round(v.seconds, 3),
                        "clips": [
                            {"file": c.file, "start": c.start, "end": c.end, "seconds": c.seconds} for c in v.clips
                        ],
                    }
                    for v in library.voices
                ],
            }
            typer.echo(json.dumps(listing, ensure_ascii=False, indent=2))
            return
        for v in library.voices:
            typer.echo(f"{v.name}\t{len(v.clips)} clip(s)\t{v.seconds:.1f} s")
        if not library.voices:
            err.print(f"no voices in {path} (whisper-subtitler voices add NAME FILE)", highlight=False)

    _run(action)


@voices_app.command("remove", epilog=VOICES_EXIT_CODES)
def remove(name: Annotated[str, typer.Argument(help="The voice to remove.")], voices_dir: VoicesDir = None) -> None:
    """Remove the voice NAME from the library."""
    from whisper_subtitler.voices.embed import identity
    from whisper_subtitler.voices.library import library_path, read_library, write_library

    def action() -> None:
        path = library_path(voices_dir)
        write_library(path, read_library(path, identity()).without(name.strip()))
        err.print(f"removed {name.strip()} ({path})", highlight=False, soft_wrap=True)

    _run(action)


@voices_app.command("export", epilog=VOICES_EXIT_CODES)
def export(
    target: Annotated[Path, typer.Argument(help="The file to write (JSON), for another machine or person.")],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace TARGET if it exists.")] = False,
    voices_dir: VoicesDir = None,
) -> None:
    """Write the whole library to TARGET (voices import reads it)."""
    from whisper_subtitler.voices.embed import identity
    from whisper_subtitler.voices.library import library_path, read_library, write_library

    def action() -> None:
        library = read_library(library_path(voices_dir), identity())
        write_library(target, library, overwrite=overwrite)
        err.print(f"exported {len(library.voices)} voice(s) to {target}", highlight=False, soft_wrap=True)

    _run(action)


@voices_app.command("import", epilog=VOICES_EXIT_CODES)
def import_voices(
    source: Annotated[Path, typer.Argument(help="A file written by voices export.")],
    replace: Annotated[bool, typer.Option("--replace", help="Replace voices of the same names.")] = False,
    voices_dir: VoicesDir = None,
) -> None:
    """Add the voices of SOURCE to the library (all or none)."""
    from whisper_subtitler.voices.embed import identity
    from whisper_subtitler.voices.library import library_path, read_library, write_library

    def action() -> None:
        model = identity()
        incoming = read_library(source, model, missing_ok=False)
        path = library_path(voices_dir)
        library = read_library(path, model).with_voices(incoming.voices, replace_existing=replace)
        write_library(path, library)
        err.print(f"imported {len(incoming.voices)} voice(s) into {path}", highlight=False, soft_wrap=True)

    _run(action)
