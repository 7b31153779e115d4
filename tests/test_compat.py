"""Other libraries' internals (``whisper_subtitler.compat``): on the versions of openai-whisper and torch that the
package was written against, its changes to them are made; on another version (faked here by standing in for the
version lookup, ``compat.installed_version``), the library's own code runs and one warning per process says so. A
fallback taken without that warning fails these tests, and so does a real run whose subtitles differ from those of
openai-whisper's own ``transcribe()``."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch

from whisper_subtitler import compat
from whisper_subtitler.compat import torch as torch_compat
from whisper_subtitler.compat import whisper as whisper_compat

REAL_LOOKUP = compat.installed_version
UNKNOWN_WHISPER = "20991231"
UNKNOWN_TORCH = "3.1.0"


def warnings_about(caplog: pytest.LogCaptureFixture, distribution: str) -> list[str]:
    """The compat warnings logged about ``distribution``."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "whisper_subtitler.compat"
        and r.levelno == logging.WARNING
        and r.getMessage().startswith(distribution)
    ]


def stand_in(monkeypatch: pytest.MonkeyPatch, distribution: str, version: str) -> list[str]:
    """Make the version lookup answer ``version`` for ``distribution`` (the real one for the others); returns the list
    of the distributions looked up, in order."""
    real = REAL_LOOKUP
    looked_up: list[str] = []

    def installed_version(name: str) -> str | None:
        looked_up.append(name)
        return version if name == distribution else real(name)

    monkeypatch.setattr(compat, "installed_version", installed_version)
    return looked_up


@pytest.fixture
def gates():
    """Both gates read the (stood-in) versions afresh, and again after the test."""
    for gate in (whisper_compat.GATE, torch_compat.GATE):
        gate.forget()
    yield
    for gate in (whisper_compat.GATE, torch_compat.GATE):
        gate.forget()


@pytest.fixture
def unknown_whisper(monkeypatch, caplog, gates):
    """openai-whisper at a version ``compat.whisper`` does not know; warnings captured."""
    caplog.set_level(logging.WARNING, logger="whisper_subtitler.compat")
    return stand_in(monkeypatch, "openai-whisper", UNKNOWN_WHISPER)


def small_whisper():
    """A random-weight Whisper with the real contexts and vocabulary and a tiny width (no checkpoint needed)."""
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(0)
    dims = ModelDimensions(80, 1500, 64, 2, 2, 51865, 448, 64, 2, 2)
    return Whisper(dims)


def test_the_installed_versions_are_known_and_our_changes_are_made(caplog, gates):
    """The versions this environment installs are the ones written for: a new openai-whisper or torch fails here
    first, so that its code is read against ``compat`` before the version is added."""
    from whisper.model import TextDecoder

    from whisper_subtitler.decoding.kernels import set_decoder_kernels

    caplog.set_level(logging.WARNING, logger="whisper_subtitler.compat")
    assert compat.installed_version("openai-whisper") in whisper_compat.KNOWN_VERSIONS
    assert whisper_compat.known() and torch_compat.known()
    assert caplog.records == []
    model = small_whisper()
    set_decoder_kernels(model, True)
    assert whisper_compat.uses_projection(model) and whisper_compat.uses_cross_attention(model)
    assert model.decoder.forward.__func__ is not TextDecoder.forward


def test_torch_versions_are_read_by_major_and_minor():
    assert torch_compat.knows("2.13.0+cpu") and torch_compat.knows("2.4.1") and torch_compat.knows("2.10.0a0+git1")
    assert not torch_compat.knows("2.3.1") and not torch_compat.knows("2.14.0") and not torch_compat.knows("3.0")
    assert not torch_compat.knows("nightly")


def test_an_unknown_version_is_read_once_and_warned_about_once(unknown_whisper, caplog):
    assert [whisper_compat.known() for _ in range(3)] == [False] * 3
    assert unknown_whisper == ["openai-whisper"]  # read once per process
    (message,) = warnings_about(caplog, "openai-whisper")
    assert message.startswith(f"openai-whisper {UNKNOWN_WHISPER} is not a version whisper-subtitler knows")
    assert "20250625" in message and "its own code runs" in message


def test_an_unknown_whisper_leaves_its_own_model_code(unknown_whisper, caplog):
    """Decoder kernels, int8 and the MPS alignment heads: openai-whisper's own modules and forward, one warning."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from whisper.model import Linear as WhisperLinear
    from whisper.model import MultiHeadAttention, TextDecoder

    from whisper_subtitler.decoding.kernels import set_decoder_kernels
    from whisper_subtitler.platform.quantize import quantize_int8

    model = small_whisper()
    set_decoder_kernels(model, True)
    assert not whisper_compat.uses_projection(model) and not whisper_compat.uses_cross_attention(model)
    assert model.decoder.forward.__func__ is TextDecoder.forward
    assert all(b.cross_attn.forward.__func__ is MultiHeadAttention.forward for b in model.decoder.blocks)
    assert not whisper_compat.install_projection(model, lambda x: x)
    whisper_compat.keep_alignment_heads_on_cpu(model)
    assert "alignment_heads" in dict(model.named_buffers(recurse=False))
    quantize_int8(model)
    layers = list(model.decoder.modules())
    assert any(type(m) is WhisperLinear for m in layers) and not any(isinstance(m, DynamicLinear) for m in layers)
    assert len(warnings_about(caplog, "openai-whisper")) == 1


def test_an_unknown_whisper_gets_its_own_word_timing_and_tokenizer_back(unknown_whisper, caplog, monkeypatch):
    """Replacements made before (a process in which the version was known) are undone: openai-whisper's own
    ``dtw``, ``median_filter``, ``dtw_cpu`` and tokenizer ``encode`` run; one warning."""
    import whisper.timing as timing
    from whisper.tokenizer import get_tokenizer

    from whisper_subtitler.platform.tokenizer import prepare_tokenizer
    from whisper_subtitler.platform.word_timing import warm_up_word_timing

    originals = {
        name: getattr(getattr(timing, name), "_whispers", getattr(timing, name))
        for name in ("dtw", "median_filter", "dtw_cpu")
    }
    for name, original in originals.items():  # ours, as a known version left them; undone after this test
        replacement = SimpleNamespace(_whispers=original)
        monkeypatch.setattr(timing, name, replacement)
    warm_up_word_timing()
    assert {name: getattr(timing, name) for name in originals} == originals

    encoding = get_tokenizer(False, num_languages=99).encoding
    encoding.encode = SimpleNamespace(_whispers=type(encoding).encode.__get__(encoding))  # ours, as if installed
    prepare_tokenizer(SimpleNamespace(is_multilingual=False, num_languages=99))
    assert "encode" not in vars(encoding)  # tiktoken's own method again
    assert len(warnings_about(caplog, "openai-whisper")) == 1


def test_an_unknown_whisper_resolves_names_without_its_private_table(unknown_whisper, caplog, monkeypatch):
    """No ``_MODELS``, ``_ALIGNMENT_HEADS`` nor ``_download``: a model wheel, else openai-whisper's own
    ``load_model`` when the model is loaded; unknown names are still refused."""
    import whisper

    from whisper_subtitler.errors import ModelNotFoundError
    from whisper_subtitler.models import WHISPERS_OWN, available_models, load_whisper, resolve_model

    read: list[str] = []

    class Watched(dict):
        """openai-whisper's table, noting our reads (its own ``available_models`` reads ``keys()``)."""

        def get(self, key, default=None):
            read.append(key)
            return super().get(key, default)

        def __getitem__(self, key):
            read.append(key)
            return super().__getitem__(key)

        def __contains__(self, key):
            read.append(key)
            return super().__contains__(key)

        def items(self):
            read.append("items")
            return super().items()

    monkeypatch.setattr(whisper, "_MODELS", Watched(whisper._MODELS))
    monkeypatch.setattr(whisper, "_ALIGNMENT_HEADS", Watched(whisper._ALIGNMENT_HEADS))
    monkeypatch.delattr(whisper, "_download")
    loaded: list[tuple] = []
    monkeypatch.setattr(whisper, "load_model", lambda *a, **k: loaded.append((a, k)) or "whisper's model")
    assert resolve_model("tiny.en").source == "embedded"  # the wheel the tests install
    small = resolve_model("small")
    assert small.source == WHISPERS_OWN
    assert load_whisper(small) == "whisper's model"
    assert loaded == [(("small",), {"device": "cpu", "download_root": str(small.path)})]
    with pytest.raises(ModelNotFoundError, match="unknown model name"):
        resolve_model("huge-v9")
    assert [m for m in available_models() if m["source"] == "cache"] == []
    assert read == []

    def offline(*_args, **_kwargs):
        raise OSError("offline")

    monkeypatch.setattr(whisper, "load_model", offline)
    with pytest.raises(ModelNotFoundError, match="openai-whisper's load_model"):
        load_whisper(small)
    assert len(warnings_about(caplog, "openai-whisper")) == 1


def test_an_unknown_whisper_decodes_with_its_own_transcribe(unknown_whisper, caplog):
    from whisper_subtitler.errors import UsageError
    from whisper_subtitler.transcription import TranscribeOptions
    from whisper_subtitler.transcription.batched import BatchedDecoding
    from whisper_subtitler.transcription.sequential import SequentialTranscriber

    model = small_whisper()
    transcriber = BatchedDecoding(8).transcriber(model, TranscribeOptions(), None, "small")
    assert isinstance(transcriber, SequentialTranscriber)
    with pytest.raises(UsageError, match="bfloat16"):
        BatchedDecoding().transcriber(model, TranscribeOptions(), SimpleNamespace(dtype="bfloat16"), "small")
    assert len(warnings_about(caplog, "openai-whisper")) == 1


def test_an_unknown_torch_keeps_its_own_settings(monkeypatch, caplog, gates):
    import torch._dynamo

    caplog.set_level(logging.WARNING, logger="whisper_subtitler.compat")
    stand_in(monkeypatch, "torch", UNKNOWN_TORCH)
    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    before = getattr(config, name)
    with torch_compat.recompile_limits(before + 100):
        assert getattr(config, name) == before
    assert torch_compat.set_allocator_settings("expandable_segments:True") is False
    (message,) = warnings_about(caplog, "torch")
    assert message.startswith(f"torch {UNKNOWN_TORCH} is not a version whisper-subtitler knows")
    assert whisper_compat.known() and warnings_about(caplog, "openai-whisper") == []


def test_a_known_torch_raises_dynamos_limits_for_the_call_only(gates):
    import torch._dynamo

    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    before = getattr(config, name)
    with torch_compat.recompile_limits(before + 100):
        assert getattr(config, name) == before + 100
    assert getattr(config, name) == before


# A real run: tiny.en on the first 12 s of pyannote's sample (real speech), in this process.


@pytest.mark.slow
def test_a_run_on_an_unknown_whisper_writes_what_its_own_transcribe_writes(unknown_whisper, caplog, monkeypatch):
    """With openai-whisper at a version not known, the default (batched) run decodes with openai-whisper's own
    ``transcribe()`` and its own word timing and tokenizer, warns once, and writes the same SRT as the sequential
    path (``--no-batch``) writes on the version known."""
    import whisper.timing as timing

    from tests import media
    from tests.media_speech import read_wav
    from whisper_subtitler import DecodingOptions, Subtitler
    from whisper_subtitler.decoding import budgeted

    def refused(*_args, **_kwargs):
        raise AssertionError("batched decoding ran on an openai-whisper version not known")

    samples = read_wav(media.SAMPLE_WAV)[: 12 * 16_000]
    with monkeypatch.context() as patch:
        patch.setattr(budgeted.BudgetedDecodingTask, "__init__", refused)
        sub = Subtitler(model="tiny.en", diarize=False, device="cpu")
        srt = sub.run(samples).render("srt")
        model = sub.pipeline.models.whisper()
        assert "forward" not in vars(model.decoder)
        assert all(getattr(getattr(timing, name), "_whispers", None) is None for name in ("dtw", "median_filter"))
    assert len(warnings_about(caplog, "openai-whisper")) == 1
    assert srt.count(" --> ") >= 2, srt

    whisper_compat.GATE.forget()
    monkeypatch.setattr(compat, "installed_version", REAL_LOOKUP)
    sequential = Subtitler(model="tiny.en", diarize=False, device="cpu", decoding=DecodingOptions(batched=False))
    assert sequential.run(samples).render("srt") == srt
    assert getattr(timing.dtw, "_whispers", None) is not None  # the version known: ours again
    assert len(warnings_about(caplog, "openai-whisper")) == 1
