"""The CPU decoder kernels (``decoding.kernels``) compute what openai-whisper computes: same logits up to float
rounding, same greedy text and same word alignment on real speech (pyannote's sample), tiny.en."""

from __future__ import annotations

import pytest
import torch

from tests import media

pytestmark = pytest.mark.slow


def load_tiny():
    from whisper_subtitler.models import load_whisper, resolve_model

    return load_whisper(resolve_model("tiny.en"), device="cpu")


@pytest.fixture(scope="module")
def models():
    """(plain openai-whisper tiny.en, the same weights with both kernels installed)."""
    from whisper_subtitler.compat import whisper as whisper_compat
    from whisper_subtitler.decoding import kernels

    plain, fast = load_tiny(), load_tiny()
    whisper_compat.install_projection(fast, kernels.small_batch_projection(fast.decoder))
    whisper_compat.install_cross_attention(fast)
    assert whisper_compat.uses_projection(fast) and whisper_compat.uses_cross_attention(fast)
    assert not whisper_compat.uses_projection(plain) and not whisper_compat.uses_cross_attention(plain)
    return plain, fast


@pytest.fixture(scope="module")
def mel():
    """Two log-mel windows of real speech: pyannote's sample from 6.5 s (30 s) and from 16 s (10 s)."""
    import whisper

    audio = whisper.load_audio(str(media.SAMPLE_WAV))
    pieces = [audio[int(6.5 * 16000) :], audio[16 * 16000 : 26 * 16000]]
    return torch.stack([whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(p)), 80) for p in pieces])


@pytest.mark.parametrize("rows", [1, 2, 8, 65])
def test_projection_equals_the_tied_embedding_product(models, rows):
    from whisper_subtitler.decoding.kernels import small_batch_projection

    _, fast = models
    x = torch.randn(rows, 1, fast.dims.n_text_state)
    expected = x @ fast.decoder.token_embedding.weight.T
    got = small_batch_projection(fast.decoder)(x)
    assert got.shape == expected.shape and got.dtype == torch.float32
    assert torch.allclose(got, expected, atol=1e-4, rtol=1e-5)


def test_greedy_decoding_gives_the_same_text(models, mel):
    import whisper

    plain, fast = models
    with torch.no_grad():
        features = plain.encoder(mel)
    for without_timestamps in (True, False):
        options = whisper.DecodingOptions(language="en", fp16=False, without_timestamps=without_timestamps)
        reference = whisper.decode(plain, features, options)
        ours = whisper.decode(fast, features, options)
        assert [r.text for r in ours] == [r.text for r in reference]
        assert len(reference[0].text.split()) > 30  # real speech was decoded, not silence
        assert [r.avg_logprob for r in ours] == pytest.approx([r.avg_logprob for r in reference], abs=1e-4)


def test_word_alignment_is_unchanged(models, mel):
    """The alignment pass turns SDPA off to read the attention weights: the kernel's own branch for that case."""
    import whisper
    from whisper.timing import find_alignment
    from whisper.tokenizer import get_tokenizer

    plain, _ = models
    tokenizer = get_tokenizer(False, language="en", task="transcribe")
    text = whisper.decode(
        plain, mel[0], whisper.DecodingOptions(language="en", fp16=False, without_timestamps=True)
    ).tokens
    timings = [find_alignment(m, tokenizer, text, mel[0], 3000) for m in models]
    assert [t.word for t in timings[1]] == [t.word for t in timings[0]]
    assert [t.start for t in timings[1]] == pytest.approx([t.start for t in timings[0]], abs=0.021)
    assert [t.end for t in timings[1]] == pytest.approx([t.end for t in timings[0]], abs=0.021)
    assert [t.probability for t in timings[1]] == pytest.approx([t.probability for t in timings[0]], abs=1e-4)


def test_kernels_turn_on_and_off_in_place():
    """Level 2 measures the kernels both ways on one model, so switching must restore openai-whisper's code."""
    from whisper.model import MultiHeadAttention, TextDecoder

    from whisper_subtitler.compat.whisper import uses_cross_attention, uses_projection
    from whisper_subtitler.decoding.kernels import set_decoder_kernels

    model = load_tiny()
    for _ in range(2):  # idempotent both ways
        set_decoder_kernels(model, True)
        assert uses_projection(model) and uses_cross_attention(model)
    for _ in range(2):
        set_decoder_kernels(model, False)
        assert not uses_projection(model) and not uses_cross_attention(model)
    assert model.decoder.forward.__func__ is TextDecoder.forward
    assert all(b.cross_attn.forward.__func__ is MultiHeadAttention.forward for b in model.decoder.blocks)


def test_pinned_attention_kernel_is_used_and_decodes_the_same_text(models, mel):
    """``attention_kernel`` really pins SDPA's kernel: the memory-efficient one has no CPU form, so it raises; the
    math form and flash give the text of PyTorch's own choice."""
    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.kernels import attention_kernel
    from whisper_subtitler.transcription.tuning import ATTENTION_KERNELS

    _, fast = models
    with torch.no_grad():
        features = fast.encoder(mel)
        reference = decode_features(fast, features, [120, 120], language="en")
        for name in ("FLASH_ATTENTION", *ATTENTION_KERNELS["cpu"]):
            with attention_kernel(name):
                assert [d.tokens for d in decode_features(fast, features, [120, 120], language="en")] == [
                    d.tokens for d in reference
                ]
                assert torch.allclose(fast.encoder(mel), features, atol=1e-3)
        with attention_kernel("EFFICIENT_ATTENTION"), pytest.raises(RuntimeError, match="No viable backend"):
            fast.encoder(mel)
