"""Long inputs are decoded and transcribed in pieces cut at pauses; the result matches one-piece decoding."""

from __future__ import annotations

import jiwer
import pytest

from tests import media
from whisper_subtitler import pieces as pieces_module
from whisper_subtitler import pipeline as pipeline_module
from whisper_subtitler import platform
from whisper_subtitler.audio import stream_audio
from whisper_subtitler.pipeline import Pipeline, RunOptions
from whisper_subtitler.vad import speech_regions, split_at_pause
from whisper_subtitler.writers import read_transcript


def test_split_at_pause():
    assert split_at_pause((), 600.0) == 600.0  # no speech at all
    assert split_at_pause(((10.0, 20.0),), 600.0) == 600.0  # ends in silence
    assert split_at_pause(((10.0, 400.0), (420.0, 600.0)), 600.0) == 410.0  # the middle of the last pause
    assert split_at_pause(((10.0, 100.0), (120.0, 600.0)), 600.0) == 600.0  # no pause late enough, no late onset
    assert split_at_pause(((10.0, 100.0), (350.0, 600.0)), 600.0) == 350.0  # the onset of the last speech
    assert split_at_pause(((0.0, 600.0),), 600.0) == 600.0  # speech without a pause: cut anyway


@pytest.mark.slow
def test_pieces_give_the_same_words(tmp_path, monkeypatch):
    """With pieces of 9 s, the 30-s sample is decoded and transcribed in at least three pieces, cut in a pause when
    there is one, no word running over a cut, together covering the audio once, with the words of one-piece
    decoding."""
    selection = platform.configure(gpu_backend="cpu", environ={}, cwd=tmp_path)
    made: list[pieces_module.SpeechPiece] = []
    real = pipeline_module.speech_pieces

    def recorded(*args, **kwargs):
        for piece in real(*args, **kwargs):
            made.append(piece)
            yield piece

    monkeypatch.setattr(pipeline_module, "speech_pieces", recorded)

    def transcript(folder):
        made.clear()
        options = RunOptions(model="tiny.en", formats=("json",), output_dir=tmp_path / folder)
        result = Pipeline(options, selection).process(media.SAMPLE_WAV)
        assert result.status == "done", result.error
        return read_transcript(result.outputs[0])

    whole = transcript("whole")
    assert len(made) == 1
    monkeypatch.setattr(pieces_module, "PIECE_SECONDS", 9.0)
    pieces = transcript("pieces")
    assert len(made) >= 3, [(p.audio.offset, p.audio.duration) for p in made]
    ends = [p.audio.offset + p.audio.duration for p in made]
    assert [p.audio.offset for p in made[1:]] == pytest.approx(ends[:-1], abs=1e-6)  # contiguous, nothing lost
    assert made[0].audio.offset == 0.0 and ends[-1] == pytest.approx(whole.duration, abs=0.01)
    cuts = ends[:-1]
    assert not [(w.text, w.start, w.end) for w in pieces.words for t in cuts if w.start < t < w.end]
    # Cut at a pause where there is one: on this sample the first cut falls between two speakers' turns (later
    # pieces hold speech without a pause long enough, and are cut anyway).
    speech = speech_regions(next(stream_audio(media.SAMPLE_WAV, piece_seconds=None)).samples)
    assert not any(a < cuts[0] < b for a, b in speech), (cuts, speech)
    starts = [w.start for w in pieces.words]
    assert starts == sorted(starts) and starts[0] > 6.0 and pieces.words[-1].end <= 30.0
    assert abs(pieces.duration - whole.duration) < 0.01
    assert jiwer.wer(media.normalize(whole.text), media.normalize(pieces.text)) <= 0.15
