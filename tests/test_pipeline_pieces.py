"""Long inputs are decoded and transcribed in pieces cut at pauses; the result matches one-piece decoding."""

from __future__ import annotations

import jiwer
import pytest

from whisper_subtitler import pieces as pieces_module
from whisper_subtitler import platform
from whisper_subtitler.pipeline import Pipeline, RunOptions
from whisper_subtitler.vad import split_at_pause
from whisper_subtitler.writers import read_transcript

from tests import media


def test_split_at_pause():
    assert split_at_pause((), 600.0) == 600.0  # no speech at all
    assert split_at_pause(((10.0, 20.0),), 600.0) == 600.0  # ends in silence
    assert split_at_pause(((10.0, 400.0), (420.0, 600.0)), 600.0) == 410.0  # the middle of the last pause
    assert split_at_pause(((10.0, 100.0), (120.0, 600.0)), 600.0) == 600.0  # no pause late enough, no late onset
    assert split_at_pause(((10.0, 100.0), (350.0, 600.0)), 600.0) == 350.0  # the onset of the last speech
    assert split_at_pause(((0.0, 600.0),), 600.0) == 600.0  # speech without a pause: cut anyway


@pytest.mark.slow
def test_pieces_give_the_same_words(tmp_path, monkeypatch):
    selection = platform.configure(gpu_backend="cpu", environ={}, cwd=tmp_path)

    def transcript(folder):
        options = RunOptions(model="tiny.en", formats=("json",), output_dir=tmp_path / folder)
        result = Pipeline(options, selection).process(media.SAMPLE_WAV)
        assert result.status == "done", result.error
        return read_transcript(result.outputs[0])

    whole = transcript("whole")
    monkeypatch.setattr(pieces_module, "PIECE_SECONDS", 9.0)
    pieces = transcript("pieces")
    starts = [w.start for w in pieces.words]
    assert starts == sorted(starts) and 6.0 < starts[0] and pieces.words[-1].end <= 30.0
    assert abs(pieces.duration - whole.duration) < 0.01
    assert jiwer.wer(media.normalize(whole.text), media.normalize(pieces.text)) <= 0.15
