"""Word timestamps for a batch of decoded chunks, from the audio features the decoding already computed.

openai-whisper times words by dynamic time warping over the cross-attention weights of its alignment heads
(``whisper/timing.py`` ``find_alignment``), then applies rules for punctuation and over-long words
(``add_word_timestamps``). Its ``find_alignment`` runs the encoder again and aligns one window per call. Here the
same computation runs once per batch on the encoder output already there: one decoder pass over the text of all
rows (padded with the end token after each row's text, which causal attention never looks back at), keeping only
the alignment heads' attention weights; then, row by row, the same normalization, median filter, DTW and word
split as ``find_alignment``, and the same rules as ``add_word_timestamps`` for one segment that spans the chunk.
The code follows openai-whisper 20250625 step for step; ``tests/test_batched_transcribe.py`` checks that it gives
``add_word_timestamps``'s words and times. It serves the batched path, which runs on the openai-whisper versions that
``compat.whisper`` knows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import whisper.timing as timing  # dtw, median_filter looked up at call time: platform keeps them off Triton
from whisper.audio import HOP_LENGTH, SAMPLE_RATE, TOKENS_PER_SECOND
from whisper.model import disable_sdpa
from whisper.timing import WordTiming, merge_punctuations

from whisper_subtitler.compat.whisper import decoder_blocks
from whisper_subtitler.decoding.token_norm import normalize_over_tokens

MEDFILT_WIDTH = 7  # frames, whisper.timing.find_alignment default
QK_SCALE = 1.0  # whisper.timing.find_alignment default
PREPEND_PUNCTUATIONS = "\"'“¿([{-"  # whisper.transcribe defaults
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"
SENTENCE_END_MARKS = ".。!！?？"


@dataclass(frozen=True, slots=True)
class TimedWord:
    """A word with start and end in seconds from the start of its chunk, and its mean token probability."""

    text: str
    start: float
    end: float
    probability: float


def _attention_weights(model, tokens: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """The decoder's blocks over ``tokens`` ``(B, T)``, up to the last one with an alignment head
    (``compat.whisper.decoder_blocks``; no final layer norm, no output projection): ``(B, n_alignment_heads, T,
    n_audio_ctx)`` cross-attention weights (pre-softmax, as ``find_alignment`` takes them) of the alignment heads
    only."""
    heads = model.alignment_heads.indices().T.tolist()  # (layer, head) pairs
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    captured: dict[int, torch.Tensor] = {}
    decoder = model.decoder
    hooks = [
        decoder.blocks[layer].cross_attn.register_forward_hook(
            lambda _, ins, outs, layer=layer: captured.__setitem__(layer, outs[-1][:, by_layer[layer]])
        )
        for layer in by_layer
    ]
    try:
        with torch.no_grad(), disable_sdpa():  # SDPA does not return the attention weights
            decoder_blocks(decoder, tokens, features, n_blocks=max(by_layer) + 1)
    finally:
        for hook in hooks:
            hook.remove()
    position = {layer: {h: i for i, h in enumerate(hs)} for layer, hs in by_layer.items()}
    return torch.stack([captured[layer][:, position[layer][head]] for layer, head in heads], dim=1)


def align_batch(
    model,
    tokenizer,
    token_rows: Sequence[Sequence[int]],
    prob_rows: Sequence[Sequence[float]],
    features: torch.Tensor,
    n_samples: Sequence[int],
) -> list[list[TimedWord]]:
    """Word timestamps for each row: ``token_rows`` are the decoded tokens of each chunk (special tokens are
    dropped), ``prob_rows`` each token's probability (``quality.Decoded.token_probs``), ``features`` the chunks'
    encoder output ``(B, n_audio_ctx, n_audio_state)``, ``n_samples`` each chunk's length in samples at 16 kHz
    (only frames that hold audio are aligned). Times are seconds from the chunk start, rounded to 10 ms as
    openai-whisper does. Rows without text give ``[]``.
    """
    texts = [[t for t in row if t < tokenizer.eot] for row in token_rows]
    rows = [i for i, t in enumerate(texts) if t]
    out: list[list[TimedWord]] = [[] for _ in token_rows]
    if not rows:
        return out
    prefix = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    sequences = [prefix + texts[i] + [tokenizer.eot] for i in rows]
    width = max(len(s) for s in sequences)
    tokens = torch.tensor([s + [tokenizer.eot] * (width - len(s)) for s in sequences], device=features.device)
    index = torch.tensor(rows, device=features.device)
    weights = _attention_weights(model, tokens, features[index] if len(rows) < len(token_rows) else features)
    for j, i in enumerate(rows):
        probs = [p for t, p in zip(token_rows[i], prob_rows[i]) if t < tokenizer.eot]
        alignment = _row_alignment(tokenizer, texts[i], probs, weights[j], n_samples[i] // HOP_LENGTH)
        out[i] = _words(alignment, n_samples[i] / SAMPLE_RATE)
    return out


def _row_alignment(
    tokenizer, text_tokens: list[int], text_token_probs: list[float], weights, num_frames: int
) -> list[WordTiming]:
    """``whisper.timing.find_alignment`` after its model call, for one row."""
    n = len(text_tokens)
    sot = len(tokenizer.sot_sequence)

    weights = weights[:, : sot + n + 2, : num_frames // 2].float()  # heads x tokens x frames, padding cut off
    weights = (weights * QK_SCALE).softmax(dim=-1)
    weights = normalize_over_tokens(weights)  # find_alignment's std_mean over the tokens, the same numbers
    weights = timing.median_filter(weights, MEDFILT_WIDTH)
    matrix = weights.mean(axis=0)[sot:-1]
    text_indices, time_indices = timing.dtw(-matrix)

    words, word_tokens = tokenizer.split_to_word_tokens(text_tokens + [tokenizer.eot])
    if len(word_tokens) <= 1:
        return []
    word_boundaries = np.pad(np.cumsum([len(t) for t in word_tokens[:-1]]), (1, 0))
    jumps = np.pad(np.diff(text_indices), (1, 0), constant_values=1).astype(bool)
    jump_times = time_indices[jumps] / TOKENS_PER_SECOND
    start_times = jump_times[word_boundaries[:-1]]
    end_times = jump_times[word_boundaries[1:]]
    # np.mean of each word's slice, as find_alignment takes it, from one array: the same sum and division without
    # np.mean's conversion of a list and its checks at every word (a word has at least one token)
    token_probs = np.asarray(text_token_probs, dtype=np.float64)
    probabilities = [
        np.add.reduce(token_probs[i:j]) / (j - i) for i, j in zip(word_boundaries[:-1], word_boundaries[1:])
    ]
    rows = zip(words, word_tokens, start_times, end_times, probabilities)
    return [WordTiming(w, t, s, e, p) for w, t, s, e, p in rows]


def _words(alignment: list[WordTiming], duration: float) -> list[TimedWord]:
    """``whisper.timing.add_word_timestamps`` for one segment from 0 to ``duration`` seconds, after a pause."""
    durations = np.array([t.end - t.start for t in alignment])
    durations = durations[durations.nonzero()]
    median_duration = min(0.7, float(np.median(durations))) if len(durations) > 0 else 0.0
    max_duration = median_duration * 2
    if len(durations) > 0:  # truncate long words at sentence boundaries
        for i in range(1, len(alignment)):
            if alignment[i].end - alignment[i].start > max_duration:
                if alignment[i].word in SENTENCE_END_MARKS:
                    alignment[i].end = alignment[i].start + max_duration
                elif alignment[i - 1].word in SENTENCE_END_MARKS:
                    alignment[i].start = alignment[i].end - max_duration
    merge_punctuations(alignment, PREPEND_PUNCTUATIONS, APPEND_PUNCTUATIONS)
    words = [
        {"word": t.word, "start": round(float(t.start), 2), "end": round(float(t.end), 2), "probability": t.probability}
        for t in alignment
        if t.word
    ]
    if words:
        # the first and second word after a pause are not longer than twice the median word duration
        if words[0]["end"] > median_duration * 4 and (
            words[0]["end"] - words[0]["start"] > max_duration
            or (len(words) > 1 and words[1]["end"] - words[0]["start"] > max_duration * 2)
        ):
            if len(words) > 1 and words[1]["end"] - words[1]["start"] > max_duration:
                boundary = max(words[1]["end"] / 2, words[1]["end"] - max_duration)
                words[0]["end"] = words[1]["start"] = boundary
            words[0]["start"] = max(0, words[0]["end"] - max_duration)
        # the segment's own end (the chunk end) wins over a last word that runs past it
        if duration > words[-1]["start"] and duration + 0.5 < words[-1]["end"]:
            words[-1]["end"] = max(words[-1]["start"] + median_duration, duration)
    return [TimedWord(w["word"], w["start"], w["end"], float(w["probability"])) for w in words]
