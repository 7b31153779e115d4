"""The ``align`` command: ``whisper-subtitler align MEDIA TRANSCRIPT``.

Registered on the application in ``cli.app``; it shares the subtitle, output and speaker options of
``transcribe`` (``cli.options``) and reports on stderr, data (``--json``) on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from whisper_subtitler.channels import check_channels
from whisper_subtitler.cli.console import err, fail, setup_logging
from whisper_subtitler.cli.options import (
    AudioLanguage,
    Bom,
    Channels,
    Crlf,
    Fps,
    GpuBackend,
    MaxCps,
    MaxLines,
    MaxLineWidth,
    NameTemplate,
    OutputDir,
    OutputFormat,
    Overwrite,
    Quiet,
    SpeakerStyleOption,
    Verbose,
    WordLevel,
)
from whisper_subtitler.cues.labels import SpeakerStyle
from whisper_subtitler.errors import ExitCode, SubtitlerError
from whisper_subtitler.options import (
    DeviceOptions,
    SpeakerOptions,
    check_audio_options,
    check_diarization,
    parse_language,
    subtitle_options,
)
from whisper_subtitler.writers import resolve_formats


def align(
    media: Annotated[Path, typer.Argument(help="The video or audio file (anything ffmpeg reads).", show_default=False)],
    transcript: Annotated[
        Path,
        typer.Argument(
            help="Its transcript: plain text (.txt), SRT (.srt), WebVTT (.vtt), or JSON (.json: ours, "
            "openai-whisper's or whisperX's). Its words are kept; their times come from the audio.",
            show_default=False,
        ),
    ],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="Whisper model whose cross-attention places the words (as for transcribe). Default: base, embedded.",
        ),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            "-l",
            help="Language of the transcript (code or name). Default: the JSON's, else detected from the audio.",
        ),
    ] = None,
    output_format: OutputFormat = "srt,vtt",
    output_dir: OutputDir = None,
    overwrite: Overwrite = False,
    name_template: NameTemplate = "{stem}",
    audio_track: Annotated[int, typer.Option("--audio-track", min=0, help="Audio stream to use (0 = first).")] = 0,
    audio_language: AudioLanguage = None,
    channels: Channels = "auto",
    json_summary: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print a JSON summary on stdout, with the sentences "
            'that were not placed (README, "Aligning a transcript").',
        ),
    ] = False,
    max_line_width: MaxLineWidth = 42,
    max_lines: MaxLines = 2,
    max_cps: MaxCps = 17.0,
    fps: Fps = 24.0,
    word_level: WordLevel = False,
    bom: Bom = False,
    crlf: Crlf = False,
    diarize: Annotated[
        bool,
        typer.Option(
            "--diarize",
            rich_help_panel="Speakers",
            help="Label who speaks "
            "(pyannote.audio, as transcribe does). Without it, speakers the transcript names (WebVTT "
            "voices, JSON speakers) are kept.",
        ),
    ] = False,
    num_speakers: Annotated[
        int | None,
        typer.Option(
            "--num-speakers",
            min=1,
            rich_help_panel="Speakers",
            help="Exact number of speakers, when known.",
            show_default=False,
        ),
    ] = None,
    min_speakers: Annotated[
        int | None,
        typer.Option(
            "--min-speakers", min=1, rich_help_panel="Speakers", help="At least this many speakers.", show_default=False
        ),
    ] = None,
    max_speakers: Annotated[
        int | None,
        typer.Option(
            "--max-speakers", min=1, rich_help_panel="Speakers", help="At most this many speakers.", show_default=False
        ),
    ] = None,
    diarization_model: Annotated[
        str | None,
        typer.Option("--diarization-model", rich_help_panel="Speakers", help="As for transcribe.", show_default=False),
    ] = None,
    speaker_names: Annotated[
        str | None,
        typer.Option(
            "--speaker-names",
            rich_help_panel="Speakers",
            help='Names in order of first appearance, e.g. "Alice,Bob".',
            show_default=False,
        ),
    ] = None,
    speaker_style: SpeakerStyleOption = SpeakerStyle.change,
    gpu_backend: GpuBackend = None,
    no_fallback: Annotated[bool, typer.Option("--no-fallback", help="As for transcribe.")] = False,
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Time an existing TRANSCRIPT against MEDIA and write subtitles (by default <media stem>.srt and .vtt).

    The words are the transcript's; Whisper's cross-attention places them in the audio. Sentences that are not in
    the audio are reported on stderr (and in --json), not invented.
    """
    from whisper_subtitler.align.run import AlignOptions, align_media
    from whisper_subtitler.speakers import parse_speaker_names

    setup_logging(verbose, quiet)
    try:
        formats = resolve_formats(output_format)
        cue_options, writer_options = subtitle_options(
            max_line_width=max_line_width,
            max_lines=max_lines,
            max_cps=max_cps,
            fps=fps,
            word_level=word_level,
            bom=bom,
            crlf=crlf,
            speaker_style=speaker_style,
        )
        asked = any(v is not None for v in (num_speakers, min_speakers, max_speakers, diarization_model, speaker_names))
        speakers = SpeakerOptions(
            diarize=bool(diarize or asked),
            num_speakers=num_speakers,
            min_speakers=min_speakers,
            max_speakers=max_speakers,
            model=diarization_model,
            names=parse_speaker_names(speaker_names) if speaker_names is not None else (),
        )
        diarization, names = speakers.diarization((output_format,))
        if diarization is not None:
            diarization = check_diarization(diarization)
        if diarization is None:
            formats = tuple(f for f in formats if f != "rttm")
        device = DeviceOptions(backend=gpu_backend.value if gpu_backend else None, fallback=not no_fallback)
        selection = device.select(model)
        options = AlignOptions(
            model=model,
            language=parse_language(language),
            formats=formats,
            output_dir=output_dir,
            name_template=name_template,
            overwrite=overwrite,
            audio_track=audio_track,
            audio_language=check_audio_options(audio_track, audio_language),
            channels=check_channels(channels),
            cues=cue_options,
            writer=writer_options,
            diarization=diarization,
            speaker_names=names,
        )
        result = align_media(media, transcript, options, selection)
    except SubtitlerError as e:
        raise fail(e) from None
    except KeyboardInterrupt:
        err.print("interrupted: no partial output was left", highlight=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    for item in result.unplaced:
        where = f"after {item.after:.2f} s" if item.after is not None else "at the start"
        err.print(
            f"[yellow]not placed:[/yellow] {result.transcript}:{item.line} ({where}, {item.reason}): {item.text}",
            highlight=False,
            soft_wrap=True,
            markup=True,
        )
    if not quiet:
        for out in result.outputs:
            err.print(f"wrote {out}", highlight=False, soft_wrap=True)
        for out in result.kept:
            err.print(f"kept existing {out} (use --overwrite to replace it)", highlight=False, soft_wrap=True)
    if json_summary:
        typer.echo(json.dumps(summary(result), ensure_ascii=False, indent=2))


def summary(result) -> dict:
    """The documented ``align --json`` object (README, "Aligning a transcript")."""
    return {
        "media": str(result.media),
        "transcript": str(result.transcript),
        "outputs": [str(p) for p in result.outputs],
        "kept": [str(p) for p in result.kept],
        "language": result.language,
        "duration": result.duration,
        "words": result.words,
        "placed": result.placed,
        "unplaced": [{"line": u.line, "text": u.text, "after": u.after, "reason": u.reason} for u in result.unplaced],
        "speakers": list(result.speakers),
        "timings": result.timings,
    }
