"""Batched beam search (``--beam-size``): the beams of every chunk of a batch in one decoder call per step.

openai-whisper's ``BeamSearchDecoder`` ranks the candidates of each audio row in a Python loop, and its
``DecodingTask.run`` (20250625) gives the decoder the audio features once per audio row, not once per beam, which
only works for one row: ``whisper.transcribe`` decodes one window at a time. Here the rows are chunk x beam (the
features repeated per beam) and the step is vectorised; the rules are openai-whisper's:

- each beam proposes its ``beam_size + 1`` most probable next tokens; per chunk the candidates are sorted by summed
  log-probability and the first ``beam_size`` that do not end become the new beams; the ending candidates ranked
  above the last kept one join the chunk's finished sequences, best first, until it holds ``round(beam_size *
  patience)`` (then the chunk is done);
- a chunk that reaches its token budget (``chunking.token_budget``) is done too: its running beams fill its finished
  sequences up to ``beam_size`` (``BeamSearchDecoder.finalize``), and the result counts as truncated when one of
  them wins;
- the finished sequence kept has the highest summed log-probability divided by its length
  (``MaximumLikelihoodRanker`` without length penalty).

Done chunks leave the batch with their rows of the key/value cache, as in ``budgeted``. Each kept token's probability
among the text tokens is carried along its beam for ``alignment``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from whisper.utils import compression_ratio

from whisper_subtitler.decoding.budgeted import BudgetedDecodingTask
from whisper_subtitler.decoding.quality import Decoded


@dataclass(frozen=True, slots=True)
class _Sequence:
    """A finished (or, at the budget, unfinished) beam: text ``tokens``, summed log-probability ``score``,
    ``probs`` of its tokens, ``ended`` with an end token."""

    tokens: tuple[int, ...]
    score: float
    probs: tuple[float, ...]
    ended: bool

    def rank(self) -> float:
        return self.score / max(1, len(self.tokens))


class BeamSearchTask(BudgetedDecodingTask):
    """Beam search over a batch of encoded chunks, with ``BudgetedDecodingTask``'s tokenizer, prompt, logit filters,
    per-row ``budgets`` and key/value cache (``compiled`` included). ``options`` must not set ``beam_size`` (it is
    ``beam_size`` here); ``patience``: ``None`` is 1.0. Raises ``ValueError`` for a beam size below 1 or a patience
    that leaves no candidate."""

    def __init__(
        self,
        model,
        options,
        budgets: Sequence[int],
        *,
        beam_size: int,
        patience: float | None = None,
        compiled: bool = False,
    ) -> None:
        super().__init__(model, options, budgets, compiled=compiled)
        self.beam_size = beam_size
        self.max_candidates = round(beam_size * (patience or 1.0))
        if beam_size < 1 or self.max_candidates < 1:
            raise ValueError(f"beam size {beam_size} with patience {patience} leaves no candidate")

    @torch.no_grad()
    def search(self, features: torch.Tensor) -> list[Decoded]:
        """One ``Decoded`` per row of ``features`` ``(n_chunks, n_audio_ctx, n_audio_state)``, in order."""
        n_chunks, width = features.shape[0], self.beam_size
        device, eot = features.device, self.tokenizer.eot
        audio = features.repeat_interleave(width, dim=0)
        tokens = torch.tensor([self.initial_tokens], device=device).repeat(n_chunks * width, 1)
        scores = torch.zeros(n_chunks * width, device=device)
        probs = torch.zeros(n_chunks * width, 0, device=device)
        chunks = list(range(n_chunks))  # the chunk of each running group of beams
        finished: list[list[_Sequence]] = [[] for _ in range(n_chunks)]
        no_speech = [float("nan")] * n_chunks
        begin = self.sample_begin
        try:
            for step in range(self.sample_len):
                logits = self.inference.logits(tokens, audio)
                if step == 0 and self.tokenizer.no_speech is not None:
                    at_sot = logits[::width, self.sot_index].float().softmax(dim=-1)
                    no_speech = at_sot[:, self.tokenizer.no_speech].tolist()
                logits = logits[:, -1]
                text_norm = torch.logsumexp(logits[:, :eot].float(), dim=-1)
                for logit_filter in self.logit_filters:
                    logit_filter.apply(logits, tokens)
                top, token_ids = torch.log_softmax(logits.float(), dim=-1).topk(width + 1, dim=-1)
                candidates = (scores[:, None] + top).view(len(chunks), width, width + 1)
                if step == 0:  # the beams are still one sequence: propose its candidates once
                    candidates[:, 1:] = -torch.inf
                flat = candidates.view(len(chunks), -1)
                order = flat.argsort(dim=1, descending=True, stable=True)
                ranked = flat.gather(1, order)
                ranked_ids = token_ids.view(len(chunks), -1).gather(1, order)
                sources = order // (width + 1) + torch.arange(len(chunks), device=device)[:, None] * width
                ends = ranked_ids == eot
                kept = ~ends & ((~ends).cumsum(dim=1) <= width)  # exactly `width` per chunk
                last_kept = (kept.cumsum(dim=1) == width).int().argmax(dim=1)
                ending = ends & (torch.arange(ends.shape[1], device=device)[None] < last_kept[:, None])
                if bool(ending.any()):
                    for g, k in ending.nonzero().tolist():
                        row, chunk = int(sources[g, k]), chunks[g]
                        if len(finished[chunk]) < self.max_candidates:
                            finished[chunk].append(
                                _Sequence(
                                    tuple(tokens[row, begin:].tolist()),
                                    float(ranked[g, k]),
                                    tuple(probs[row].tolist()),
                                    True,
                                )
                            )
                source = sources[kept]
                new_ids = ranked_ids[kept]
                token_probs = (logits[source, new_ids].float() - text_norm[source]).exp()
                tokens = torch.cat([tokens[source], new_ids[:, None]], dim=-1)
                scores = ranked[kept]
                probs = torch.cat([probs[source], token_probs[:, None]], dim=-1)
                cache = self.inference.kv_cache
                for module in self.inference.kv_modules:  # self-attention; the cross-attention is the chunk's
                    cache[module] = cache[module][source]

                done = [
                    len(finished[chunk]) >= self.max_candidates
                    or step + 1 >= self.budgets[chunk]
                    or tokens.shape[-1] >= self.n_ctx
                    for chunk in chunks
                ]
                if not any(done):
                    continue
                for g in (g for g, d in enumerate(done) if d):
                    self._fill(finished[chunks[g]], tokens, scores, probs, range(g * width, (g + 1) * width))
                stay = [g for g, d in enumerate(done) if not d]
                if not stay:
                    break
                rows = torch.tensor([g * width + b for g in stay for b in range(width)], device=device)
                tokens, scores, probs, audio = tokens[rows], scores[rows], probs[rows], audio[rows]
                for module in cache:  # in place: the cache hooks hold this very dict
                    cache[module] = cache[module][rows]
                chunks = [chunks[g] for g in stay]
        finally:
            self.inference.cleanup_caching()
        return [self._result(finished[i], no_speech[i]) for i in range(n_chunks)]

    def _fill(self, finished: list[_Sequence], tokens, scores, probs, rows: range) -> None:
        """Add the running beams in ``rows`` to ``finished``, best first, until it holds ``beam_size`` sequences
        (``BeamSearchDecoder.finalize``)."""
        order = sorted(rows, key=lambda r: -float(scores[r]))
        for row in order:
            if len(finished) >= self.beam_size:
                break
            finished.append(
                _Sequence(
                    tuple(tokens[row, self.sample_begin :].tolist()),
                    float(scores[row]),
                    tuple(probs[row].tolist()),
                    False,
                )
            )

    def _result(self, finished: list[_Sequence], no_speech_prob: float) -> Decoded:
        best = max(finished, key=_Sequence.rank)
        text = self.tokenizer.decode(list(best.tokens)).strip()
        return Decoded(
            tokens=best.tokens,
            text=text,
            avg_logprob=best.score / (len(best.tokens) + 1),
            compression_ratio=compression_ratio(text),
            no_speech_prob=no_speech_prob,
            temperature=0.0,
            truncated=not best.ended,
            token_probs=best.probs,
        )
