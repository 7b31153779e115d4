"""The decoding options with openai-whisper's names (--initial-prompt, --beam-size, --best-of, --patience,
--temperature, the thresholds, --suppress-tokens, --condition-on-previous-text) and --compute-type: how the command
line reads them, and what each changes on real speech (pyannote's sample, the tiny.en model)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.test_batched_options import _Capture  # stands in for Pipeline
from whisper_subtitler.transcription import TranscribeOptions


def _invoke(tmp_path, monkeypatch, *args):
    from whisper_subtitler import pipeline
    from whisper_subtitler.cli import app

    media = tmp_path / "a.wav"
    media.write_bytes(b"RIFF")
    monkeypatch.setattr(pipeline, "Pipeline", _Capture)
    _Capture.options = None
    return CliRunner().invoke(app, ["transcribe", str(media), "--gpu-backend", "cpu", "--no-diarize", *args])


def test_cli_reads_the_decoding_options(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch, "set_num_threads", lambda n: setattr(torch, "_threads_asked", n))
    result = _invoke(
        tmp_path,
        monkeypatch,
        *("--initial-prompt", " Saoirse, Nguyen. ", "--beam-size", "5", "--patience", "2", "--best-of", "3"),
        *("--temperature", "0,0.5", "--compression-ratio-threshold", "2", "--logprob-threshold", "-inf"),
        *("--no-speech-threshold", "0.9", "--suppress-tokens", "-1,220", "--threads", "3"),
    )
    assert result.exit_code == 0, result.output
    assert torch._threads_asked == 3  # type: ignore[attr-defined]  # --threads, after level 1's own choice
    t = _Capture.options.transcribe
    assert (t.initial_prompt, t.beam_size, t.patience, t.best_of) == ("Saoirse, Nguyen.", 5, 2.0, 3)
    assert t.temperatures == (0.0, 0.5) and t.suppressed() == (-1, 220)
    assert (t.compression_ratio_threshold, t.logprob_threshold, t.no_speech_threshold) == (2.0, float("-inf"), 0.9)
    defaults = _invoke(tmp_path, monkeypatch)
    assert defaults.exit_code == 0 and _Capture.options.transcribe == TranscribeOptions()  # openai-whisper's


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--patience", "2"), "--beam-size"),
        (("--beam-size", "2", "--patience", "0.1"), "no beam"),
        (("--condition-on-previous-text",), "--no-batch"),
        (("--temperature", "0,hot"), "--temperature"),
        (("--temperature", "-1"), "--temperature"),
        (("--suppress-tokens", "1,x"), "--suppress-tokens"),
        (("--suppress-tokens", "-5"), "--suppress-tokens"),
        (("--compute-type", "float16"), "GPU"),
        (("--compute-type", "bfloat16", "--no-batch"), "batched"),
    ],
)
def test_bad_decoding_options_are_usage_errors(tmp_path, monkeypatch, args, says):
    result = _invoke(tmp_path, monkeypatch, *args)
    assert result.exit_code == 2 and says in result.output, result.output
    assert _Capture.options is None  # refused before the pipeline was made


def test_the_sequential_path_passes_each_option_under_openai_whispers_name():
    from types import SimpleNamespace

    from whisper_subtitler.transcription.sequential import _transcribe_clips

    seen: dict = {}
    fake = _recording_whisper(seen)
    options = TranscribeOptions(
        initial_prompt="Dianne",
        beam_size=5,
        best_of=3,
        patience=1.5,
        temperatures=(0.0, 0.4),
        suppress_tokens="",
        compression_ratio_threshold=2.0,
        logprob_threshold=-2.0,
        no_speech_threshold=0.5,
        condition_on_previous_text=True,
    )
    _transcribe_clips(fake, None, SimpleNamespace(samples=np.zeros(3 * 16_000)), [(1.0, 2.0)], "en", options)
    assert seen["initial_prompt"] == "Dianne" and seen["carry_initial_prompt"] is True
    assert (seen["beam_size"], seen["best_of"], seen["patience"]) == (5, 3, 1.5)
    assert seen["temperature"] == (0.0, 0.4) and seen["suppress_tokens"] == []
    assert (seen["compression_ratio_threshold"], seen["logprob_threshold"], seen["no_speech_threshold"]) == (
        2.0,
        -2.0,
        0.5,
    )
    assert seen["condition_on_previous_text"] is True and seen["clip_timestamps"] == [1.0, 2.0]


# Real speech, real model.


@pytest.fixture(scope="module")
def tiny():
    from whisper_subtitler.models import load_whisper, resolve_model

    return load_whisper(resolve_model("tiny.en"))


@pytest.fixture(scope="module")
def sample():
    """pyannote's sample (real telephone speech, 30 s) and its speech: one region, 6.6 s to 30 s."""
    from tests import media
    from whisper_subtitler.audio import extract_audio

    return extract_audio(media.SAMPLE_WAV), ((6.6, 30.0),)


def _text(transcript) -> str:
    return "".join(s.text for s in transcript.segments)


@pytest.mark.slow
def test_batched_beam_search_is_openai_whispers_for_every_chunk_of_the_batch(tiny, sample):
    import torch
    import whisper

    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.features import encode_windows

    audio, _ = sample
    windows = [(6.6, 12.0), (12.0, 17.5), (17.5, 22.0)]
    budgets = [30, 30, 6]  # the third stops at its budget, unfinished
    with torch.no_grad():
        features = encode_windows(tiny, [audio.samples[round(a * 16000) : round(b * 16000)] for a, b in windows])
    beams = decode_features(tiny, features, budgets, language="en", beam_size=3)
    for i, budget in enumerate(budgets):
        alone = whisper.DecodingOptions(
            language="en", beam_size=3, without_timestamps=True, fp16=False, sample_len=budget
        )
        expected = whisper.decode(tiny, features[i : i + 1], alone)[0]
        assert beams[i].tokens == tuple(expected.tokens), (i, beams[i].text, expected.text)
        assert beams[i].avg_logprob == pytest.approx(expected.avg_logprob, abs=1e-4)
        assert len(beams[i].token_probs) == len(beams[i].tokens)
    assert [b.truncated for b in beams] == [False, False, True]
    patient = decode_features(tiny, features, budgets, language="en", beam_size=3, patience=2.0)
    assert [p.text for p in patient] != [b.text for b in beams]  # waiting for more ended beams finds another
    greedy = decode_features(tiny, features, budgets, language="en")
    assert [g.text for g in greedy] != [b.text for b in beams]  # beam search decodes differently on this audio


@pytest.mark.slow
def test_best_of_keeps_the_most_probable_of_its_samples(tiny, sample):
    import torch

    from whisper_subtitler.decoding.decode import decode_features, most_probable
    from whisper_subtitler.decoding.features import encode_windows

    audio, _ = sample
    with torch.no_grad():
        features = encode_windows(tiny, [audio.samples[round(6.6 * 16000) : round(17.5 * 16000)]])
    kw = {"language": "en", "temperature": 1.0, "seeds": [7]}
    one = decode_features(tiny, features, [60], **kw)[0]
    four = decode_features(tiny, features, [60], best_of=4, **kw)[0]
    assert four.tokens != one.tokens  # another candidate won
    assert most_probable([one, four]) is four  # and it is the more probable: the first candidate is `one`
    assert decode_features(tiny, features, [60], best_of=4, **kw)[0].tokens == four.tokens  # seeded


@pytest.mark.slow
@pytest.mark.parametrize("path", ["batched", "sequential"])
def test_an_initial_prompt_spells_a_name(tiny, sample, path):
    from whisper_subtitler.transcription.batched import BatchedTranscriber
    from whisper_subtitler.transcription.sequential import SequentialTranscriber

    audio, speech = sample
    make = BatchedTranscriber if path == "batched" else SequentialTranscriber
    plain = _text(make(tiny, TranscribeOptions(language="en")).transcribe(audio, speech))
    prompted = _text(
        make(tiny, TranscribeOptions(language="en", initial_prompt="Hi, this is Dianne.")).transcribe(audio, speech)
    )
    assert "Diane" in plain and "Dianne" not in plain
    assert "Dianne" in prompted


@pytest.mark.slow
def test_temperature_thresholds_and_suppressed_tokens_change_the_decoding(tiny, sample):
    from whisper_subtitler.decoding.chunking import plan_chunks
    from whisper_subtitler.decoding.features import array_source
    from whisper_subtitler.transcription.batched import ChunkTranscriber

    audio, _ = sample
    source, chunks = (
        array_source(audio.samples),
        plan_chunks([(12.0, 17.5)]),
    )  # "This is Diane in New Jersey and I'm Sheila ..."

    def run(**kw):
        transcriber = ChunkTranscriber(tiny, TranscribeOptions(language="en", **kw), batch_size=4)
        return "".join(s.text for s in transcriber.transcribe(chunks, source)), transcriber.sampled

    greedy, sampled = run()
    assert sampled == 0  # it passes openai-whisper's thresholds at temperature 0
    assert run(logprob_threshold=-0.01)[1] == 5  # now every decoding fails: sampled at 0.2, 0.4, ... 1.0
    assert run(logprob_threshold=-0.01, temperatures=(0.0,)) == (greedy, 0)  # one temperature: no fallback
    assert run(logprob_threshold=-0.01, no_speech_threshold=0.0) == ("", 0)  # every window is silence
    hot, sampled = run(temperatures=(1.0,))
    assert sampled == 1 and hot != greedy
    (sheila,) = tiny_tokens(" Sheila")  # one token
    spelled, _ = run(suppress_tokens=f"-1,{sheila}")
    assert "Sheila" in greedy and "Sheila" not in spelled


def tiny_tokens(text: str) -> list[int]:
    from whisper.tokenizer import get_tokenizer

    return get_tokenizer(False).encode(text)


@pytest.mark.slow
def test_int8_quantizes_the_model_and_still_transcribes(sample):
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    from whisper_subtitler import platform
    from whisper_subtitler.models import load_whisper, resolve_model
    from whisper_subtitler.transcription.batched import BatchedTranscriber

    selection = platform.configure("cpu", model="tiny.en", compute_type="int8", environ={}, log_warnings=False)
    assert selection.dtype == "int8"
    model = platform.prepare_model(load_whisper(resolve_model("tiny.en")), selection)
    assert isinstance(model.decoder.blocks[0].mlp[0], DynamicLinear)
    assert not isinstance(model.encoder.blocks[0].mlp[0], DynamicLinear)  # int8 encoders cost words (quantize.py)
    audio, speech = sample
    assert "New Jersey" in _text(BatchedTranscriber(model, TranscribeOptions(language="en")).transcribe(audio, speech))


def test_the_sequential_paths_clips_end_at_the_last_mel_frame():
    """openai-whisper's ``transcribe()`` loops forever on a clip that ends past the last mel frame (160 samples)."""
    from types import SimpleNamespace

    from whisper_subtitler.transcription.sequential import _transcribe_clips

    seen: dict = {}
    fake = _recording_whisper(seen)
    audio = SimpleNamespace(samples=np.zeros(2 * 16_000 + 100))  # 200 frames and 100 samples: 2.00625 s
    _transcribe_clips(fake, None, audio, [(0.5, 1.0), (1.5, 2.00625), (2.003, 2.00625)], "en", TranscribeOptions())
    assert seen["clip_timestamps"] == [0.5, 1.0, 1.5, 2.0]  # the last clip had no whole frame: dropped
    seen.clear()
    assert _transcribe_clips(fake, None, audio, [(2.001, 2.00625)], "en", TranscribeOptions()) == {"segments": []}
    assert seen == {}


def _recording_whisper(seen: dict):
    """A stand-in for the ``whisper`` module: its ``transcribe`` records the keyword arguments into ``seen`` and
    returns no segments; ``audio`` is openai-whisper's own (frame constants)."""
    from types import SimpleNamespace

    import whisper.audio

    return SimpleNamespace(
        transcribe=lambda model, samples, **kw: seen.update(kw) or {"segments": []}, audio=whisper.audio
    )
