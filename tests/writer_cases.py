"""Transcripts and cues that every writer test renders: speakers, tricky characters, Japanese."""

from __future__ import annotations

from tests.cue_helpers import transcript_of, words_of
from whisper_subtitler.cues import CueOptions, build_cues
from whisper_subtitler.types import Transcript


def tricky() -> Transcript:
    """Two speakers (one change mid-sentence) and text containing ``-->``, ``<``, ``>``, ``&``, braces."""
    a = words_of("Rock & roll <live> is back --> and the {band} plays on,", 0.5, speaker="SPEAKER_00")
    b = words_of(
        "but only until midnight. After that we go home and sleep for a very long time.",
        a[-1].end + 0.1,
        speaker="SPEAKER_01",
    )
    c = words_of("Okay.", b[-1].end + 2.0, speaker="SPEAKER_00")
    return transcript_of(a + b, c)


def plain() -> Transcript:
    """No speakers, long enough for several cues."""
    return transcript_of(words_of("The quick brown fox jumps over the lazy dog. " * 6, 1.0))


def japanese() -> Transcript:
    return transcript_of(
        words_of(
            "今日はとても良い天気ですね。散歩に行きましょうか、それとも家で映画を見ますか。",
            0.2,
            spaceless=True,
            char_seconds=0.12,
        ),
        language="ja",
    )


CASES = {"tricky": tricky, "plain": plain, "japanese": japanese}


def case(name: str, speaker_style: str = "change"):
    """(transcript, cues) of a named case, cues built in ``speaker_style``."""
    transcript = CASES[name]()
    return transcript, build_cues(transcript, CueOptions(speaker_style=speaker_style))
