"""What the language plan computes once is reused by decoding, with the same result: the cross-attention keys and
values the language screen projects (``language_id.cross_keys_values``), and the encoder output of the windows that
stayed whole (only the others are encoded again)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests import media


@pytest.mark.slow
@pytest.mark.parametrize("kernels", [True, False], ids=["our-cross-attention", "openai-whisper"])
def test_decoding_with_keys_and_values_projected_beforehand_gives_the_same_tokens(kernels):
    import whisper

    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.kernels import set_decoder_kernels
    from whisper_subtitler.decoding.language_id import cross_keys_values
    from whisper_subtitler.models import load_whisper, resolve_model
    from whisper_subtitler.transcription.chunk_transcriber import _cross_rows

    model = load_whisper(resolve_model("tiny.en"), device="cpu")
    set_decoder_kernels(model, kernels)
    audio = whisper.load_audio(str(media.SAMPLE_WAV))
    pieces = [audio[int(6.5 * 16000) :], audio[16 * 16000 : 26 * 16000], audio[2 * 16000 : 6 * 16000]]
    mel = torch.stack([whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(p)), 80) for p in pieces])
    budgets = [120, 60, 3]  # the last row leaves the batch early: its keys and values must leave with it
    with torch.no_grad():
        features = model.encoder(mel)
        plain = decode_features(model, features, budgets, language="en")
        reused = decode_features(model, features, budgets, language="en", cross=cross_keys_values(model, features))
        sampled = decode_features(
            model,
            features,
            budgets,
            language="en",
            temperature=0.6,
            seeds=[1, 2, 3],
            cross=cross_keys_values(model, features),
        )
        sampled_plain = decode_features(model, features, budgets, language="en", temperature=0.6, seeds=[1, 2, 3])
    whole = cross_keys_values(model, features)
    per_row = [[(k[i], v[i]) for k, v in whole] for i in range(3)]
    completed = _cross_rows(model, features, [per_row[0], None, per_row[2]])  # the middle row projected there
    assert all(torch.equal(a, b) for pair, ref in zip(completed, whole) for a, b in zip(pair, ref))
    assert _cross_rows(model, features, [None, None, None]) is None
    assert len(plain[0].text.split()) > 30 and plain[2].truncated
    assert [d.tokens for d in reused] == [d.tokens for d in plain]
    assert [d.avg_logprob for d in reused] == pytest.approx([d.avg_logprob for d in plain], abs=1e-6)
    assert [d.tokens for d in sampled] == [d.tokens for d in sampled_plain]


def test_a_decoding_batch_encodes_only_the_windows_not_kept():
    from whisper_subtitler.transcription.batched import ChunkTranscriber

    encoded: list[int] = []

    def encode(samples):
        encoded.append(len(samples))
        return torch.stack([torch.full((4, 2), float(s[0])) for s in samples])

    transcriber = object.__new__(ChunkTranscriber)
    transcriber._encode = encode
    samples = [np.full(10, float(i), dtype=np.float32) for i in range(4)]
    kept = [torch.full((4, 2), 10.0), None, torch.full((4, 2), 12.0), None]
    features = transcriber._features(samples, kept)
    assert encoded == [2]  # one encoder call, for the two windows not kept
    assert features[:, 0, 0].tolist() == [10.0, 1.0, 12.0, 3.0]
    encoded.clear()
    assert transcriber._features(samples, None).shape == (4, 4, 2) and encoded == [4]


@pytest.mark.slow
def test_a_batch_with_a_language_per_row_decodes_each_row_as_its_own_language_would():
    """The language plan's check decodes a region in two languages as two rows of one batch
    (``decode_features(languages=...)``): each row gets the tokens of decoding it alone with its language's token."""
    from tests import media_multilingual as mm
    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.language_id import encode_regions
    from whisper_subtitler.models import load_whisper, resolve_model

    clips = mm.clips(["es", "en"])
    spanish, english = clips["es/pangrama"].samples, clips["en/hello_world"].samples
    model = load_whisper(resolve_model("base"), device="cpu")
    rows = [(spanish, "es"), (spanish, "en"), (english, "en")]
    with torch.no_grad():
        features = encode_regions(model, [samples for samples, _ in rows])
        together = decode_features(
            model, features, [40] * 3, language="es", languages=[language for _, language in rows]
        )
        alone = [decode_features(model, features[i : i + 1], [40], language=rows[i][1])[0] for i in range(3)]
    assert [d.tokens for d in together] == [d.tokens for d in alone]
    assert together[0].text != together[1].text  # the language token did change the decoding
    with pytest.raises(ValueError):
        decode_features(model, features, [40] * 3, language="es", languages=["es"])  # one per row
    with pytest.raises(ValueError):
        decode_features(model, features, [40] * 3, language="es", languages=["es"] * 3, beam_size=2)
