"""Batched greedy decoding of encoded chunks with openai-whisper's ``DecodingTask``, two changes made:

- every row has its own token budget (``chunking.token_budget``), and a row that reaches it stops;
- rows that finished (end token or budget) leave the batch: their rows of the key/value cache, of the audio
  features and of the tokens are dropped, so later steps compute only the rows still running.

``whisper.decode`` runs every row until all rows finish or 224 tokens are sampled, so one looping chunk stalls its
whole batch. Each step also keeps the probability of the sampled token among the text tokens, which
``alignment`` needs for the word probabilities, so that its pass need not compute the logits again. Everything
else (tokenizer, prompt, logit filters, token suppression, no-speech probability, the final text and statistics)
is ``DecodingTask``'s own code. Decoding is text-only (``without_timestamps=True``): word timestamps come from the
cross-attention alignment afterwards: text-only decoding is faster, with no loss of accuracy (docs/performance.md).

Sampling (the temperature fallback, temperature > 0) is seeded: each audio row draws from its own
``torch.Generator``, seeded by ``sampling_seed`` from the run's ``--seed``, the chunk's first sample and the
temperature, so a chunk samples the same tokens whatever the batch it is decoded in, the rows beside it, the order of
the runs or what else used the global random number generator before (``whisper.decoding.GreedyDecoder`` samples with
the global one, unseeded: three runs gave three transcripts).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from whisper.decoding import DecodingOptions, GreedyDecoder

from whisper_subtitler.compat import whisper as whisper_compat

# ``whisper.decoding.DecodingTask`` with its private steps under public names (``compat.whisper.decoding_task``).
DecodingTask: Any = whisper_compat.decoding_task()


def sampling_seed(seed: int, start_sample: int, temperature: float) -> int:
    """The seed of one chunk's sampling at one temperature: a 63-bit hash (BLAKE2b) of the run's ``seed``, the
    chunk's first sample in the file (``start_sample``, 16 kHz samples) and ``temperature`` (to 3 decimals)."""
    digest = hashlib.blake2b(f"{seed}:{start_sample}:{temperature:.3f}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


class SeededSampler(GreedyDecoder):
    """``whisper.decoding.GreedyDecoder`` whose sampling (temperature > 0) draws each audio row's next token with that
    row's own ``torch.Generator`` (seeded with ``seeds[row]``), on the CPU so that the draws are the same on every
    device. ``rows`` maps the running rows to their original row (``BudgetedDecodingTask`` drops finished rows).
    Temperature 0 is the greedy argmax, unchanged. The log-probabilities kept are those of the unscaled logits, as
    ``GreedyDecoder`` keeps them."""

    def __init__(self, temperature: float, eot: int, seeds: Sequence[int]) -> None:
        super().__init__(temperature, eot)
        self.generators = [torch.Generator().manual_seed(int(s)) for s in seeds] if temperature > 0 else []
        self.rows = list(range(len(seeds)))

    def update(self, tokens: torch.Tensor, logits: torch.Tensor, sum_logprobs: torch.Tensor):
        if self.temperature == 0:
            return super().update(tokens, logits, sum_logprobs)
        probs = torch.softmax(logits.float() / self.temperature, dim=-1).cpu()
        drawn = [torch.multinomial(probs[j], 1, generator=self.generators[row]) for j, row in enumerate(self.rows)]
        next_tokens = torch.cat(drawn).to(logits.device)
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        current = logprobs[torch.arange(logprobs.shape[0], device=logits.device), next_tokens]
        sum_logprobs += current * (tokens[:, -1] != self.eot)
        next_tokens[tokens[:, -1] == self.eot] = self.eot
        tokens = torch.cat([tokens, next_tokens[:, None]], dim=-1)
        return tokens, bool((tokens[:, -1] == self.eot).all())


class BudgetedDecodingTask(DecodingTask):
    """``whisper.decoding.DecodingTask`` with per-row token budgets and finished rows dropped from the batch.

    ``budgets``: the most tokens to sample per audio row (length ``n_audio``). After ``run``, ``truncated``
    holds the audio rows that stopped at their budget without an end token, and ``token_probs`` a
    ``(n_audio, sample_len)`` tensor: the probability of each sampled token (see ``quality.Decoded``). Greedy or
    sampling decoding only (``beam_size`` and ``best_of`` are refused with ``ValueError``: ``beams.BeamSearchTask``
    searches beams, and ``decode.decode_features`` gives each ``best_of`` candidate a row of its own). ``compiled``:
    each step's decoder call goes through ``torch.compile`` (``compiled.CompiledInference``). ``seeds``: one sampling
    seed per audio row (``SeededSampler``; default: ``sampling_seed(0, row, temperature)``). ``cross``: the audio
    rows' cross-attention keys and values when already computed (``language_id.cross_keys_values``; not with
    ``compiled``), so that the first step projects none. ``languages``: one language code per audio row, written as
    that row's language token in place of ``options.language``'s (which must be given), so that one batch decodes
    rows in several languages: each decoding step reads the decoder's weights and its vocabulary projection once
    for the whole batch, which is most of a step's cost for a few rows on the CPU.
    """

    def __init__(
        self,
        model,
        options: DecodingOptions,
        budgets: Sequence[int],
        *,
        compiled: bool = False,
        seeds: Sequence[int] | None = None,
        cross: Sequence[tuple] | None = None,
        languages: Sequence[str] | None = None,
    ) -> None:
        if options.beam_size is not None or (options.best_of or 1) > 1:
            raise ValueError("batched decoding supports greedy and sampling decoding only (no beam_size, best_of)")
        if languages is not None and (options.language is None or len(languages) != len(budgets)):
            raise ValueError("languages needs options.language and one language per audio row")
        if options.sample_len is None:
            options = replace(options, sample_len=max(budgets))
        super().__init__(model, options)
        if compiled:
            from whisper_subtitler.decoding.compiled import CompiledInference

            self.inference = CompiledInference(model, len(self.initial_tokens))
        self.budgets = list(budgets)
        if seeds is None:
            seeds = [sampling_seed(0, row, options.temperature) for row in range(len(self.budgets))]
        self.decoder = SeededSampler(options.temperature, self.tokenizer.eot, seeds)
        self.truncated: set[int] = set()
        self.token_probs = torch.zeros(0)
        self.cross = None if compiled else cross
        self.languages = list(languages) if languages is not None else None

    def audio_features(self, mel: torch.Tensor) -> torch.Tensor:
        """The encoder output, given as it is: in the model's dtype, bfloat16 included (openai-whisper's own check
        knows float16 and float32 only)."""
        return mel

    def main_loop(self, audio_features: torch.Tensor, tokens: torch.Tensor):
        n_batch = tokens.shape[0]
        device = audio_features.device
        eot = self.tokenizer.eot
        budgets = torch.tensor(self.budgets, device=device)
        rows = torch.arange(n_batch, device=device)  # the original row of each running row
        self.decoder.rows = list(range(n_batch))
        sum_logprobs = torch.zeros(n_batch, device=device)
        no_speech_probs = [np.nan] * n_batch
        done_tokens: list[list[int] | None] = [None] * n_batch
        done_logprobs = [0.0] * n_batch
        self.token_probs = torch.zeros(n_batch, self.sample_len, device=device)
        if self.languages is not None:
            tokens[:, self.sot_index + 1] = torch.tensor(
                [self.tokenizer.to_language_token(language) for language in self.languages], device=device
            )
        if self.cross is not None and not self.inference.kv_cache:
            self.inference.kv_cache, self.inference.hooks = self.model.install_kv_cache_hooks()
            whisper_compat.fill_cross_cache(self.model, self.inference.kv_cache, self.cross)
        try:
            for step in range(self.sample_len):
                logits = self.inference.logits(tokens, audio_features)
                if step == 0 and self.tokenizer.no_speech is not None:
                    probs_at_sot = logits[:, self.sot_index].float().softmax(dim=-1)
                    no_speech_probs = probs_at_sot[:, self.tokenizer.no_speech].tolist()
                logits = logits[:, -1]
                text_norm = torch.logsumexp(logits[:, :eot].float(), dim=-1)  # before the filters change the logits
                for logit_filter in self.logit_filters:
                    logit_filter.apply(logits, tokens)
                tokens, _ = self.decoder.update(tokens, logits, sum_logprobs)
                # The sampled token passed the filters, so its logit is unchanged; the end token has no text
                # probability.
                sampled = tokens[:, -1:].clamp(max=eot - 1)
                self.token_probs[rows, step] = (logits.gather(1, sampled).squeeze(1).float() - text_norm).exp()

                ended = tokens[:, -1] == eot
                out_of_budget = ~ended & (step + 1 >= budgets)
                finished = ended | out_of_budget
                if tokens.shape[-1] >= self.n_ctx:
                    finished[:] = True
                if not bool(finished.any()):
                    continue
                for j in finished.nonzero().flatten().tolist():
                    row = int(rows[j])
                    done_tokens[row] = tokens[j].tolist()
                    done_logprobs[row] = float(sum_logprobs[j])
                    if not bool(ended[j]):
                        self.truncated.add(row)
                keep = (~finished).nonzero().flatten()
                if keep.numel() == 0:
                    break
                tokens, sum_logprobs, budgets, rows = tokens[keep], sum_logprobs[keep], budgets[keep], rows[keep]
                self.decoder.rows = rows.tolist()
                audio_features = audio_features[keep]
                # In place: the cache hooks of Whisper.install_kv_cache_hooks hold this very dict.
                cache = self.inference.kv_cache
                for module in cache:
                    cache[module] = cache[module][keep]
            else:  # sample_len reached with rows still running
                for j, row in enumerate(rows.tolist()):
                    done_tokens[row] = tokens[j].tolist()
                    done_logprobs[row] = float(sum_logprobs[j])
                    self.truncated.add(row)
        finally:
            self.inference.cleanup_caching()

        finished = [t for t in done_tokens if t is not None]
        assert len(finished) == n_batch, "every row ends with an end token, its budget or sample_len"
        width = max(len(t) for t in finished)
        padded = [t + [eot] * (width - len(t)) for t in finished]
        return (
            torch.tensor(padded, device=device),
            torch.tensor(done_logprobs, device=device),
            no_speech_probs,
        )
