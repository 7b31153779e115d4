"""The command line's decoding options (the "Decoding" panel of ``transcribe --help``), with openai-whisper's names
and meanings; ``cli.options`` re-exports them, so that a command still finds every option there.

Defaults are openai-whisper's (``whisper.transcribe``) unless a help text says otherwise; ``cli.args`` turns the values
into ``options.DecodingOptions`` (checked there: ``UsageError``, exit 2).
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

# Typer reads these annotations at run time: Optional[...] keeps them readable by every supported Typer version.
# ruff: noqa: UP045

DEFAULT_TEMPERATURES = "0,0.2,0.4,0.6,0.8,1"  # options.DEFAULT_TEMPERATURES as the flag's text
InitialPrompt = Annotated[
    Optional[str],
    typer.Option(
        "--initial-prompt",
        rich_help_panel="Decoding",
        show_default=False,
        help="Text Whisper reads as what came before each window: names, spellings and vocabulary "
        '(e.g. "Saoirse, Nguyen, Kubernetes."). Given to every chunk, and with --no-batch to every window.',
    ),
]
BeamSize = Annotated[
    Optional[int],
    typer.Option(
        "--beam-size",
        min=1,
        rich_help_panel="Decoding",
        show_default=False,
        help="Beam search with this many beams at temperature 0 (openai-whisper's CLI uses 5); default: greedy. "
        "The batched path searches the beams of a whole batch together; slower than greedy.",
    ),
]
BestOf = Annotated[
    Optional[int],
    typer.Option(
        "--best-of",
        min=1,
        rich_help_panel="Decoding",
        show_default=False,
        help="Candidates sampled at each fallback temperature above 0, the most probable kept; default 1.",
    ),
]
Patience = Annotated[
    Optional[float],
    typer.Option(
        "--patience",
        min=0.0,
        rich_help_panel="Decoding",
        show_default=False,
        help="Beam search patience (arXiv:2204.05424): finish after patience x beam size ended beams; "
        "default 1.0. Needs --beam-size.",
    ),
]
Temperature = Annotated[
    str,
    typer.Option(
        "--temperature",
        rich_help_panel="Decoding",
        help="Sampling temperature, or a comma-separated fallback schedule: a window whose text fails the "
        "thresholds below is decoded again at the next temperature. One value: no fallback.",
    ),
]
CompressionRatioThreshold = Annotated[
    float,
    typer.Option(
        "--compression-ratio-threshold",
        min=0.0,
        rich_help_panel="Decoding",
        help="Decode again at the next temperature when the text's gzip compression ratio is above this "
        "(repetitive text); inf turns the check off.",
    ),
]
LogprobThreshold = Annotated[
    float,
    typer.Option(
        "--logprob-threshold",
        rich_help_panel="Decoding",
        help="Decode again at the next temperature when the mean token log-probability is below this; "
        "-inf turns the check off.",
    ),
]
NoSpeechThreshold = Annotated[
    float,
    typer.Option(
        "--no-speech-threshold",
        min=0.0,
        max=1.0,
        rich_help_panel="Decoding",
        help="A window whose no-speech probability is above this and whose log-probability is below "
        "--logprob-threshold is silence: no text, no fallback. 1 turns the rule off.",
    ),
]
SuppressTokens = Annotated[
    str,
    typer.Option(
        "--suppress-tokens",
        rich_help_panel="Decoding",
        help="Comma-separated token ids never to sample; -1 stands for Whisper's non-speech symbols; an empty "
        'string ("") suppresses nothing.',
    ),
]
ConditionOnPreviousText = Annotated[
    bool,
    typer.Option(
        "--condition-on-previous-text",
        rich_help_panel="Decoding",
        help="With --no-batch only: give each window the previous window's text as its prompt (openai-whisper's "
        "default; off here, since it can make a model loop). The batched path decodes chunks independently.",
    ),
]
