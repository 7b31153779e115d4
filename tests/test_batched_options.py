"""How the batch size is chosen (``--batch-size``, the platform's advice, level-2 tuning) and how ``--no-batch``
and ``--batch-size`` reach the pipeline."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from whisper_subtitler.transcription import TranscribeOptions
from whisper_subtitler.transcription.batched import BatchedDecoding
from whisper_subtitler.transcription.sequential import SequentialDecoding
from whisper_subtitler.transcription.tuning import (
    DecodingSettings,
    attention_kernels,
    batch_candidates,
    choose_settings,
)


def test_candidates_on_the_cpu_and_around_the_gpu_advice():
    assert batch_candidates("cpu", 8) == (4, 8, 16)
    assert batch_candidates("cpu", 2) == (2, 4, 8, 16)  # the advice is always measured: it is the baseline
    assert batch_candidates("cuda", 16) == (8, 16, 32)
    assert batch_candidates("cuda", 32, cap=32) == (16, 32)
    assert batch_candidates("rocm", 1) == (1, 2)


def test_attention_candidates_leave_out_what_cannot_run_or_is_turned_off():
    assert attention_kernels("cuda", "float16") == ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
    assert attention_kernels("cuda", "float32") == ("EFFICIENT_ATTENTION", "MATH")  # no fp32 flash kernel
    assert attention_kernels("rocm", "float32") == ("EFFICIENT_ATTENTION", "MATH")
    assert attention_kernels("cpu", "float32") == ("MATH",)
    assert all("CUDNN_ATTENTION" not in attention_kernels(b, "float16") for b in ("cuda", "rocm", "mps", "cpu"))


def test_requested_batch_size_wins_and_level_1_takes_the_advice():
    selection = SimpleNamespace(batch_size=8, optimization_level=2, backend="cpu")
    assert choose_settings(None, None, [], TranscribeOptions(), selection, requested=3) == DecodingSettings(3)
    level1 = SimpleNamespace(batch_size=12, optimization_level=1, backend="cuda")
    assert choose_settings(None, None, [], TranscribeOptions(), level1) == DecodingSettings(12)


class _Capture:
    """Stands in for ``Pipeline``: keeps the options the CLI built, processes nothing."""

    options = None

    def __init__(self, options, selection):
        type(self).options = options

    def load(self, sources):
        pass

    def process(self, source, **kwargs):
        from whisper_subtitler.results import FileResult, FileStatus

        return FileResult(source=source, status=FileStatus.DONE)

    def prefetch(self, source):
        pass

    def close(self):
        pass


@pytest.mark.parametrize(
    ("args", "decoding"),
    [((), BatchedDecoding(None)), (("--batch-size", "4"), BatchedDecoding(4)), (("--no-batch",), SequentialDecoding())],
)
def test_cli_passes_batch_options_to_the_pipeline(args, decoding, tmp_path, monkeypatch):
    from whisper_subtitler import pipeline
    from whisper_subtitler.cli import app

    media = tmp_path / "a.wav"
    media.write_bytes(b"RIFF")
    monkeypatch.setattr(pipeline, "Pipeline", _Capture)
    result = CliRunner().invoke(app, ["transcribe", str(media), "--gpu-backend", "cpu", *args])
    assert result.exit_code == 0, result.output
    assert _Capture.options.decoding == decoding


def test_cli_refuses_a_batch_size_below_1(tmp_path):
    from whisper_subtitler.cli import app

    result = CliRunner().invoke(app, ["transcribe", str(tmp_path / "a.wav"), "--batch-size", "0"])
    assert result.exit_code == 2


@pytest.mark.slow
def test_level_2_measures_batch_sizes_once_and_caches_the_winner(tmp_path, monkeypatch):
    import numpy as np

    from tests import media
    from whisper_subtitler import platform
    from whisper_subtitler.models import load_whisper, resolve_model
    from whisper_subtitler.types import SAMPLE_RATE, Audio
    from whisper_subtitler.vad import speech_regions

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sentences = [f"This is sentence number {n}, spoken slowly and clearly." for n in ("one", "two", "three", "four")]
    parts = []
    for i, text in enumerate(sentences):
        wav = media.espeak(text, tmp_path / f"{i}.wav")
        import wave

        with wave.open(str(wav)) as w:
            parts.append(np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768)
        parts.append(np.zeros(28 * SAMPLE_RATE, np.float32))  # 28 s pauses: one 30 s window per sentence
    audio = Audio(samples=np.concatenate(parts), sample_rate=SAMPLE_RATE, source=tmp_path / "four.wav")
    speech = speech_regions(audio.samples)
    model = load_whisper(resolve_model("tiny.en"))
    selection = platform.configure(gpu_backend="cpu", optimization_level=2, model="tiny.en", environ={}, cwd=tmp_path)
    selection = replace(selection, batch_size=2)  # a baseline among few chunks, so that larger sizes differ

    measured: list[tuple[int, bool | None, str | None, bool]] = []
    from whisper_subtitler.transcription import batched as transcriber

    real = transcriber.ChunkTranscriber.transcribe

    def counting(self, chunks, source):
        measured.append((self.batch_size, self.decoder_kernels, self.attention, self.compiled_decoder))
        return real(self, chunks, source)

    monkeypatch.setattr(transcriber.ChunkTranscriber, "transcribe", counting)
    # The compiled step is the eager one here: compiling it costs a minute and a half on 2 cores and is tested in
    # tests/test_decoding_compiled.py; this test is about what level 2 measures and keeps.
    from whisper_subtitler.decoding import compiled as compiled_module

    compiled_calls: list[int] = []

    def eager_step(decoder, tokens, audio_features, kv_cache):
        compiled_calls.append(tokens.shape[0])
        return decoder(tokens, audio_features, kv_cache=kv_cache)

    monkeypatch.setattr(compiled_module, "compiled_step", lambda: eager_step)
    first = choose_settings(
        model, audio, speech, TranscribeOptions(), selection, model_name="tiny.en", trial=transcriber.ChunkTranscriber
    )
    assert first.batch_size in batch_candidates("cpu", 2)
    assert sorted({b for b, *_ in measured}) == [2, 4, 8, 16]  # every candidate measured
    # then at the winning batch size: the decoder kernels, on (the CPU's default) and off; the attention kernel,
    # PyTorch's choice and math; the decoder step eager and compiled, each a first (warm-up) run and a timed run;
    # each with the winners before it
    size, kernels, attention = first.batch_size, first.decoder_kernels, first.attention
    assert measured[-8:-6] == [(size, True, None, False), (size, False, None, False)]
    assert measured[-6:-4] == [(size, kernels, a, False) for a in (None, "MATH")]
    assert measured[-4:] == [(size, kernels, attention, False)] * 2 + [(size, kernels, attention, True)] * 2
    assert isinstance(kernels, bool) and isinstance(first.compiled_decoder, bool)
    cache = json.loads((tmp_path / "cache" / "whisper-subtitler" / "tuning.json").read_text())
    assert len(cache["entries"]) == 4  # a winner per setting
    compiled = next(e for k, e in cache["entries"].items() if "compiled_decoder" in k)
    assert set(compiled["seconds"]) | set(compiled["failed"]) == {"False", "True"}  # both tried
    # none failed, none changed the words, and the compiled candidate went through the compiled step
    assert not [k for k, e in cache["entries"].items() if e["failed"]] and compiled_calls
    measured.clear()
    again = choose_settings(
        model, audio, speech, TranscribeOptions(), selection, model_name="tiny.en", trial=transcriber.ChunkTranscriber
    )
    assert again == first and measured == []  # read from the cache, nothing measured


def test_word_change_is_the_share_of_words_not_kept_in_order():
    from whisper_subtitler.transcription.tuning import word_change

    words = "the quick brown fox jumps over the lazy dog".split()
    assert word_change(words, words) == 0.0 and word_change([], []) == 0.0
    assert word_change(words, words[:-1]) == pytest.approx(1 / 9)
    assert word_change(words, [*words[:4], "leaps", *words[5:]]) == pytest.approx(1 / 9)
    assert word_change(words, []) == 1.0 and word_change([], words) == 1.0


def test_level_2_drops_a_candidate_that_changes_the_words(tmp_path, monkeypatch):
    """Speed is not all: a pinned attention kernel whose words differ from the first run's is dropped, however fast,
    and the settings measured after it are measured with PyTorch's choice (decoding simulated, real tiny.en)."""
    import numpy as np

    from whisper_subtitler import platform
    from whisper_subtitler.models import load_whisper, resolve_model
    from whisper_subtitler.transcription import batched as transcriber
    from whisper_subtitler.types import SAMPLE_RATE, Audio, Segment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    seen = []

    def simulated(self, chunks, source):
        seen.append((self.attention, self.compiled_decoder))
        text = "a faulty kernel says this" if self.attention == "MATH" else "every chunk says the same thing here"
        return [Segment(start=c.start, end=c.end, text=" " + text) for c in chunks]

    monkeypatch.setattr(transcriber.ChunkTranscriber, "transcribe", simulated)
    speech = [(30.0 * i + 1, 30.0 * i + 5) for i in range(6)]  # one 30-s window each
    audio = Audio(samples=np.zeros(180 * SAMPLE_RATE, np.float32), sample_rate=SAMPLE_RATE, source=tmp_path / "a.wav")
    selection = platform.configure(gpu_backend="cpu", optimization_level=2, model="tiny.en", environ={}, cwd=tmp_path)
    model = load_whisper(resolve_model("tiny.en"))
    settings = choose_settings(
        model,
        audio,
        speech,
        TranscribeOptions(),
        selection,
        model_name="tiny.en",
        requested=4,
        trial=transcriber.ChunkTranscriber,
    )
    assert settings.attention is None and ("MATH", False) in seen
    assert all(attention is None for attention, compiled in seen if compiled)  # compile measured after the drop
    cache = json.loads((tmp_path / "cache" / "whisper-subtitler" / "tuning.json").read_text())
    attention = next(e for k, e in cache["entries"].items() if "attention@" in k)
    assert attention["failed"] == ["'MATH'"] and attention["winner"] == "auto"
