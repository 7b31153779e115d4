"""Stage 2, transcription: the protocol (``protocol``), the batched implementation (``batched``, the default, with its
level-2 ``tuning``) and the sequential one (``sequential``, ``--no-batch``). Importing this package imports no torch."""

from whisper_subtitler.transcription.protocol import (
    Decoding,
    Region,
    TranscribeOptions,
    Transcriber,
    check_options,
    detect_language,
    new_transcript,
)

__all__ = [
    "Decoding",
    "Region",
    "TranscribeOptions",
    "Transcriber",
    "check_options",
    "detect_language",
    "new_transcript",
]
