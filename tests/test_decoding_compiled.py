"""``torch.compile`` of the decoder step (``decoding.compiled``) decodes what the eager step decodes: same tokens on
real speech (pyannote's sample), tiny.en on the CPU, with rows leaving the batch at different steps."""

from __future__ import annotations

import pytest
import torch

from tests import media

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_features():
    """tiny.en with the CPU decoder kernels on (the CPU default), and the encoder output of three windows of real
    speech: pyannote's sample from 6.5 s (30 s), from 16 s (10 s) and from 2 s (4 s)."""
    import whisper

    from whisper_subtitler.decoding.kernels import set_decoder_kernels
    from whisper_subtitler.models import load_whisper, resolve_model

    model = load_whisper(resolve_model("tiny.en"), device="cpu")
    set_decoder_kernels(model, True)
    audio = whisper.load_audio(str(media.SAMPLE_WAV))
    pieces = [audio[int(6.5 * 16000) :], audio[16 * 16000 : 26 * 16000], audio[2 * 16000 : 6 * 16000]]
    mel = torch.stack([whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(p)), 80) for p in pieces])
    with torch.no_grad():
        return model, model.encoder(mel)


def test_compiled_step_gives_the_same_tokens_and_compiles_graphs(tiny_features):
    from torch._dynamo.utils import counters

    from whisper_subtitler.decoding.decode import decode_features

    model, features = tiny_features
    budgets = [120, 60, 3]  # the last row stops at its budget, so the batch shrinks from 3 rows to 2, then 1
    with torch.no_grad():
        eager = decode_features(model, features, budgets, language="en")
        graphs = counters["stats"]["unique_graphs"]
        compiled = decode_features(model, features, budgets, language="en", compiled=True)
    assert counters["stats"]["unique_graphs"] > graphs  # the compiled path ran, it did not fall back to eager
    assert len(eager[0].text.split()) > 30 and eager[2].truncated  # real speech, and a row left the batch early
    assert [d.tokens for d in compiled] == [d.tokens for d in eager]
    assert [d.avg_logprob for d in compiled] == pytest.approx([d.avg_logprob for d in eager], abs=1e-4)
    assert [d.token_probs for d in compiled] == [pytest.approx(d.token_probs, abs=1e-4) for d in eager]


def test_a_failing_compiled_step_falls_back_to_eager_decoding(tiny_features, monkeypatch, caplog):
    """A compiled step that fails in a real run (a compiler removed since level 2 chose it) costs a warning, not the
    file: the batch is decoded again eagerly, with the same words, and compilation stays off for the rest."""
    import whisper

    from whisper_subtitler.decoding import compiled
    from whisper_subtitler.decoding.chunking import plan_chunks
    from whisper_subtitler.decoding.features import array_source
    from whisper_subtitler.transcription import TranscribeOptions
    from whisper_subtitler.transcription.batched import ChunkTranscriber
    from whisper_subtitler.vad import speech_regions

    model, _ = tiny_features
    audio = whisper.load_audio(str(media.SAMPLE_WAV))
    source = array_source(audio, 16000)
    chunks = plan_chunks(speech_regions(audio))

    def broken():
        def step(*args, **kwargs):
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")

        return step

    eager = ChunkTranscriber(model, TranscribeOptions(), batch_size=4).transcribe(chunks, source)
    monkeypatch.setattr(compiled, "compiled_step", broken)
    transcriber = ChunkTranscriber(model, TranscribeOptions(), batch_size=4, compiled_decoder=True)
    fallback = transcriber.transcribe(chunks, source)
    assert "decoding with the compiled decoder step failed (InvalidCxxCompiler" in caplog.text
    assert transcriber.compiled_decoder is False
    assert [s.text for s in fallback] == [s.text for s in eager] and len(" ".join(s.text for s in eager)) > 100
