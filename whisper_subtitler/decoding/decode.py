"""One batch of encoded chunks decoded: greedy or sampled with token budgets (``budgeted.BudgetedDecodingTask``),
beam search at temperature 0 (``beams.BeamSearchTask``), or ``best_of`` sampled candidates side by side, the most
probable kept. The batched transcriber calls ``decode_features`` once per batch and temperature."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch
from whisper.decoding import DecodingOptions

from whisper_subtitler.decoding.beams import BeamSearchTask
from whisper_subtitler.decoding.budgeted import BudgetedDecodingTask
from whisper_subtitler.decoding.quality import Decoded


def decode_features(
    model,
    features: torch.Tensor,
    budgets: Sequence[int],
    *,
    language: str,
    task: str = "transcribe",
    temperature: float = 0.0,
    fp16: bool = False,
    prompt: str | None = None,
    compiled: bool = False,
    seeds: Sequence[int] | None = None,
    suppress_tokens: Sequence[int] = (-1,),
    beam_size: int | None = None,
    patience: float | None = None,
    best_of: int | None = None,
    cross: Sequence[tuple] | None = None,
    languages: Sequence[str] | None = None,
) -> list[Decoded]:
    """Decode a batch of encoded chunks: ``features`` of shape ``(B, n_audio_ctx, n_audio_state)`` (the encoder
    output, in the model's dtype), ``budgets`` the token budget per row; ``compiled``: see ``BudgetedDecodingTask``;
    ``seeds``: the sampling seed of each row at this ``temperature`` (``sampling_seed``), used when it is above 0;
    ``suppress_tokens``: token ids never sampled (``whisper.decoding.DecodingOptions``: -1 for the non-speech symbols,
    empty for no suppression at all). ``beam_size`` (used at temperature 0 only, as ``whisper.transcribe`` does):
    beam search with ``patience``, all rows' beams in one decoder call (``beams.BeamSearchTask``). ``best_of`` (used
    above temperature 0 only): that many candidates sampled per row side by side in the batch, each with its own seed,
    the most probable kept (``most_probable``). ``cross``: the rows' cross-attention keys and values when already
    computed (``language_id.cross_keys_values``), used by greedy and sampled decoding of one candidate per row.
    ``languages``: each row's language, in place of ``language`` (greedy and sampled decoding of one candidate per
    row: ``BudgetedDecodingTask``; ``ValueError`` otherwise). Returns one ``Decoded`` per row, in order.
    """
    options = DecodingOptions(
        task=task,
        language=language,
        temperature=temperature,
        without_timestamps=True,
        fp16=fp16,
        prompt=prompt,
        suppress_tokens=list(suppress_tokens),
    )
    n = best_of if best_of is not None and temperature > 0 else 1
    if languages is not None and ((beam_size is not None and temperature == 0) or n > 1):
        raise ValueError("a language per row is for greedy or sampled decoding of one candidate per row")
    if beam_size is not None and temperature == 0:
        task_ = BeamSearchTask(model, options, budgets, beam_size=beam_size, patience=patience, compiled=compiled)
        return task_.search(features)
    if n > 1:
        features = features.repeat_interleave(n, dim=0)
        budgets = [b for b in budgets for _ in range(n)]
        seeds = [candidate_seed(s, k) for s in seeds for k in range(n)] if seeds is not None else None
    decoding = BudgetedDecodingTask(
        model, options, budgets, compiled=compiled, seeds=seeds, cross=cross if n == 1 else None, languages=languages
    )
    results = decoding.run(features)
    probs = decoding.token_probs.cpu()
    decoded = [
        Decoded(
            tokens=tuple(int(t) for t in r.tokens),
            text=r.text,
            avg_logprob=float(r.avg_logprob),
            compression_ratio=float(r.compression_ratio),
            no_speech_prob=float(r.no_speech_prob),
            temperature=temperature,
            truncated=i in decoding.truncated,
            token_probs=tuple(probs[i, : len(r.tokens)].tolist()),
        )
        for i, r in enumerate(results)
    ]
    return [most_probable(decoded[i : i + n]) for i in range(0, len(decoded), n)]


def candidate_seed(seed: int, candidate: int) -> int:
    """The sampling seed of candidate ``candidate`` of a row whose seed is ``seed`` (``best_of``): ``seed`` itself
    for the first, so that ``best_of`` 1 samples what it always did; a 63-bit BLAKE2b hash of both for the others."""
    if candidate == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}:{candidate}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def most_probable(candidates: Sequence[Decoded]) -> Decoded:
    """The candidate openai-whisper would keep (``MaximumLikelihoodRanker`` without length penalty): the highest
    summed log-probability divided by the number of text tokens (``avg_logprob`` is the sum over tokens + 1, the
    end token). The first wins a tie. Raises ``ValueError`` for no candidates."""

    def score(d: Decoded) -> float:
        return d.avg_logprob * (len(d.tokens) + 1) / max(1, len(d.tokens))

    return max(candidates, key=score)
