"""The alignment heads' weights standardised over the tokens by the compiled loop (``decoding.token_norm``) are
PyTorch's ``(w - mean) / std`` from ``torch.std_mean``, bit for bit, on random and on real weights."""

from __future__ import annotations

import pytest
import torch

from tests import media
from whisper_subtitler.decoding import token_norm
from whisper_subtitler.decoding.token_norm import normalize_over_tokens


def reference(weights: torch.Tensor) -> torch.Tensor:
    std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
    return (weights - mean) / std


@pytest.mark.parametrize("shape", [(6, 112, 750), (8, 3, 1500), (1, 2, 5), (4, 224, 1500)])
def test_random_softmaxed_weights_give_pytorchs_numbers(shape):
    generator = torch.Generator().manual_seed(sum(shape))
    weights = (torch.randn(*shape, generator=generator) * 4).softmax(dim=-1)
    ours = normalize_over_tokens(weights)
    assert token_norm._KERNEL and token_norm._KERNEL[0] is not None  # the compiled loop ran
    assert ours.dtype == torch.float32 and ours.shape == weights.shape
    assert torch.equal(ours, reference(weights))


def test_a_slice_of_a_larger_tensor_as_the_alignment_cuts_it():
    full = torch.randn(6, 130, 1500, generator=torch.Generator().manual_seed(3)).softmax(dim=-1)
    weights = full[:, :57, :700]  # heads x tokens x frames, the padding cut off: not contiguous
    assert not weights.is_contiguous()
    assert torch.equal(normalize_over_tokens(weights), reference(weights))


def test_one_token_gives_what_pytorch_gives():
    weights = torch.rand(2, 1, 30, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(normalize_over_tokens(weights), reference(weights), equal_nan=True, rtol=0, atol=0)


def test_other_dtypes_and_a_missing_kernel_use_pytorch(monkeypatch):
    def no_kernel_here(weights):
        raise AssertionError("float64 weights went to the float32 kernel")

    weights = torch.rand(3, 20, 40, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    monkeypatch.setattr(token_norm, "_KERNEL", [no_kernel_here])
    assert torch.equal(normalize_over_tokens(weights), reference(weights))
    monkeypatch.setattr(token_norm, "_KERNEL", [None])
    single = weights.float()
    assert torch.equal(normalize_over_tokens(single), reference(single))


@pytest.mark.slow
def test_real_alignment_weights_of_tiny_en_on_real_speech():
    """The weights ``find_alignment`` standardises: tiny.en's alignment heads over a transcript of the real
    two-speaker sample, softmaxed over its first 30 s of audio frames."""
    import whisper
    from whisper.tokenizer import get_tokenizer

    from whisper_subtitler.audio import stream_audio
    from whisper_subtitler.decoding.alignment import _attention_weights
    from whisper_subtitler.models import load_whisper, resolve_model

    model = load_whisper(resolve_model("tiny.en"))
    samples = next(stream_audio(media.SAMPLE_WAV, piece_seconds=None)).samples
    mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(samples)), model.dims.n_mels)
    tokenizer = get_tokenizer(False, language="en", task="transcribe")
    text = " Hello, and welcome to the show. Today we talk about speaker diarization and subtitles."
    tokens = torch.tensor([[*tokenizer.sot_sequence, tokenizer.no_timestamps, *tokenizer.encode(text), tokenizer.eot]])
    with torch.no_grad():
        features = model.encoder(mel[None])
        weights = _attention_weights(model, tokens, features)[0]  # (heads, tokens, 1500)
    weights = weights[:, :, :750].float().softmax(dim=-1)
    assert weights.shape[0] >= 2 and weights.shape[1] == tokens.shape[1]
    assert torch.equal(normalize_over_tokens(weights), reference(weights))
