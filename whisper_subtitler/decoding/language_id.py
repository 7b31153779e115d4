"""Whisper's language identification per speech region, at a fraction of an encoder pass per region.

Whisper detects the language from its first decoding step: the distribution over its language tokens after the
start-of-transcript token (``whisper.decoding.detect_language``), with cross-attention over an encoded 30-s window.
Three tools here, from the cheapest:

- ``features_probabilities`` on a whole encoded window: Whisper's own detection (what openai-whisper does once per
  file).
- ``sliced_probabilities``: detection per region from a window's own encoder output, the cross-attention limited to
  the region's frames (one decoder step for all the regions of a window, no encoder pass). The frames are contextual
  (the encoder's self-attention spans the window), so this is a screen, not a verdict
  (``code_switching.screened``): where it hears another language than the window's, the region is encoded alone.
- ``encode_regions`` + ``features_probabilities``: each region encoded alone, the encoder input cut to the region's
  own length instead of 30 s (the positional embedding cut to match, as whisper.cpp's ``audio_ctx`` does); a 3-s
  region costs about a tenth of a 30-s window, and its detection agreed with the padded 30-s window's on the test
  clips (docs/multilingual.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from whisper_subtitler.decoding.code_switching import restrict

FRAME_S = 0.02  # seconds per encoder frame: 30 s / 1500
MARGIN_FRAMES = 5  # encoder frames kept on each side of a region in a sliced detection (0.1 s)
MIN_REGION_S = 1.0  # seconds: shorter regions are padded with silence to this before being encoded alone
SAMPLES_PER_FRAME = 320  # 16 kHz samples per encoder frame (two mel hops of 160)


def _language_tokens(model) -> tuple[list[int], list[str]]:
    from whisper.tokenizer import get_tokenizer

    if not model.is_multilingual:
        raise ValueError("an English-only model has no language detection")
    tokenizer = get_tokenizer(model.is_multilingual, num_languages=model.num_languages)
    return list(tokenizer.all_language_tokens), list(tokenizer.all_language_codes)


def features_probabilities(model, features, allowed: Sequence[str] | None = None) -> list[dict[str, float]]:
    """Language probabilities of each row of ``features`` ``(B, n_frames, n_audio_state)`` (any number of frames):
    ISO 639-1 code -> probability, over ``allowed`` languages only when given (``code_switching.restrict``).
    Raises ``ValueError`` for an English-only model. Call under ``torch.no_grad``."""
    import torch
    from whisper.tokenizer import get_tokenizer

    tokens, codes = _language_tokens(model)
    sot = get_tokenizer(model.is_multilingual, num_languages=model.num_languages).sot
    x = torch.full((features.shape[0], 1), sot, dtype=torch.long, device=features.device)
    logits = model.logits(x, features)[:, -1]
    probs = logits[:, tokens].float().softmax(dim=-1).cpu().tolist()
    return [restrict(dict(zip(codes, row)), allowed) for row in probs]


def window_language(model, samples: np.ndarray) -> tuple[str, float]:
    """Whisper's language detection on one window, as ``whisper.decoding.detect_language`` does it: ``samples``
    (16 kHz mono float32) padded or trimmed to 30 s, encoded, and the most likely language token after the
    start-of-transcript token. Returns ``(ISO 639-1 code, probability 0-1)``; ``("en", 1.0)`` for an English-only
    model, which has no language tokens."""
    import torch
    import whisper

    if not model.is_multilingual:
        return "en", 1.0
    window = whisper.pad_or_trim(torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)))
    mel = whisper.log_mel_spectrogram(window, model.dims.n_mels).to(model.device)
    with torch.inference_mode():
        features = model.embed_audio(mel.unsqueeze(0).to(next(model.parameters()).dtype))
        probabilities = features_probabilities(model, features)[0]
    code = max(probabilities, key=probabilities.__getitem__)
    return code, float(probabilities[code])


def cross_keys_values(model, features) -> list[tuple]:
    """The decoder's cross-attention keys and values of encoded windows ``features`` ``(..., n_frames,
    n_audio_state)``: one ``(keys, values)`` pair per decoder block, each of ``features``' shape (the ``key`` and
    ``value`` projections of ``whisper.model.MultiHeadAttention``). They depend on the audio only, so the language
    screen's are the ones decoding the same window computes (``budgeted.BudgetedDecodingTask``'s ``cross``). Call
    under ``torch.no_grad``."""
    xa = features.to(model.decoder.token_embedding.weight.dtype)
    return [(block.cross_attn.key(xa), block.cross_attn.value(xa)) for block in model.decoder.blocks]


def silence_keys_values(model) -> list[tuple]:
    """The decoder's cross-attention keys and values of ``MIN_REGION_S`` (1 s) of silence encoded alone: one
    ``(keys, values)`` pair per decoder block, each ``(n_frames, n_audio_state)``. Joined to a region's frames in
    ``sliced_probabilities`` (``quiet_spans``), they give the slice silence to attend to besides the speech, which
    Whisper's detection expects after speech. Call under ``torch.no_grad``."""
    silence = np.zeros(round(MIN_REGION_S * 16_000), dtype=np.float32)
    return [(k[0], v[0]) for k, v in cross_keys_values(model, encode_regions(model, [silence]))]


def sliced_probabilities(
    model,
    features,
    spans: Sequence[tuple[float, float]],
    allowed: Sequence[str] | None = None,
    keys_values: Sequence[tuple] | None = None,
    *,
    quiet_spans: Sequence[tuple[float, float]] = (),
    silence: Sequence[tuple] | None = None,
) -> list[dict[str, float]]:
    """Detection per region of one encoded window ``features`` ``(n_audio_ctx, n_audio_state)``, the cross-attention
    limited to each region's frames (``spans``: ``(start, end)`` seconds from the window's start, ``MARGIN_FRAMES``
    added on each side). One dict per span, then one per ``quiet_spans``; see ``features_probabilities``.

    All spans go through the decoder's first step together, as rows of one batch whose cross-attention is masked to
    the span's frames (the same softmax as attending to the slice alone), so the window's keys and values are
    projected once, not once per region; ``keys_values``: the window's ``cross_keys_values``, when already computed.
    The rows of ``quiet_spans`` also attend to ``silence`` (``silence_keys_values``): the region's frames and the
    encoder output of silence encoded on its own, together (cross-attention has no order, so this is the decoder
    seeing speech and silence; not the same as encoding the region with silence after it, whose frames would see
    each other). Raises ``ValueError`` for ``quiet_spans`` without ``silence``. Call under ``torch.no_grad``."""
    import torch
    from whisper.tokenizer import get_tokenizer

    if not spans and not quiet_spans:
        return []
    if quiet_spans and silence is None:
        raise ValueError("quiet_spans need the keys and values of silence")
    tokens, codes = _language_tokens(model)
    sot = get_tokenizer(model.is_multilingual, num_languages=model.num_languages).sot
    n_frames = features.shape[0]
    n_quiet = silence[0][0].shape[0] if quiet_spans and silence is not None else 0
    frames = torch.arange(n_frames, device=features.device)
    masks = []
    for row, (start, end) in enumerate([*spans, *quiet_spans]):
        a = max(0, min(n_frames - 1, int(start / FRAME_S) - MARGIN_FRAMES))
        b = max(a + 1, min(n_frames, int(round(end / FRAME_S)) + MARGIN_FRAMES))
        quiet = torch.full((n_quiet,), row >= len(spans), dtype=torch.bool, device=features.device)
        masks.append(torch.cat([(frames >= a) & (frames < b), quiet]))
    rows = len(masks)
    hidden = ~torch.stack(masks)[:, None, :]  # (rows, 1 (every head), n_keys): the frames a row does not attend to
    decoder = model.decoder
    if keys_values is None:
        keys_values = cross_keys_values(model, features)
    if n_quiet and silence is not None:
        keys_values = [(torch.cat([k, ks]), torch.cat([v, vs])) for (k, v), (ks, vs) in zip(keys_values, silence)]
    n_keys = n_frames + n_quiet
    x = decoder.token_embedding.weight[sot] + decoder.positional_embedding[0]
    x = x.expand(rows, 1, -1)
    for block, (keys, values) in zip(decoder.blocks, keys_values):
        x = x + block.attn(block.attn_ln(x))[0]  # one token: self-attention needs no mask
        cross = block.cross_attn
        heads = cross.n_head
        q = cross.query(block.cross_attn_ln(x))[:, 0].view(rows, heads, -1)  # (rows, heads, head_dim)
        k = keys.view(n_keys, heads, -1).transpose(0, 1)  # (heads, n_keys, head_dim), once per window
        v = values.view(n_keys, heads, -1).transpose(0, 1)
        scores = torch.einsum("rhd,hnd->rhn", q, k) * q.shape[-1] ** -0.5
        weights = scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)
        attended = torch.einsum("rhn,hnd->rhd", weights, v).reshape(rows, 1, -1)
        x = x + cross.out(attended)
        x = x + block.mlp(block.mlp_ln(x))
    x = decoder.ln(x)
    logits = (x[:, -1] @ decoder.token_embedding.weight[tokens].T).float()  # the language tokens' logits only
    probs = logits.softmax(dim=-1).cpu().tolist()
    return [restrict(dict(zip(codes, row)), allowed) for row in probs]


def encode_regions(model, pieces: Sequence[np.ndarray]):
    """Encode each of ``pieces`` (float32 16 kHz samples, at most 30 s each) alone, the encoder input cut to the
    longest piece (at least ``MIN_REGION_S``; shorter pieces padded with silence, as Whisper pads a window):
    ``(len(pieces), n_frames, n_audio_state)`` in the dtype of the model's weights, on its device, with
    ``n_frames = ceil(longest / 320)`` at most ``n_audio_ctx``. openai-whisper's ``AudioEncoder.forward`` step for
    step, with its positional embedding cut to ``n_frames``. Call under ``torch.no_grad``."""
    import torch
    import torch.nn.functional as F
    import whisper

    encoder = model.encoder
    longest = max(max(len(p) for p in pieces), round(MIN_REGION_S * 16_000))
    n_samples = min(whisper.audio.N_SAMPLES, -(-longest // SAMPLES_PER_FRAME) * SAMPLES_PER_FRAME)
    mels = torch.stack(
        [
            whisper.log_mel_spectrogram(
                whisper.pad_or_trim(torch.from_numpy(np.ascontiguousarray(p, dtype=np.float32)), n_samples),
                model.dims.n_mels,
                device=model.device,
            )
            for p in pieces
        ]
    )
    x = mels.to(encoder.conv1.weight.dtype)
    x = F.gelu(encoder.conv1(x))
    x = F.gelu(encoder.conv2(x)).permute(0, 2, 1)
    x = (x + encoder.positional_embedding[: x.shape[1]]).to(x.dtype)
    for block in encoder.blocks:
        x = block(x)
    return encoder.ln_post(x)
