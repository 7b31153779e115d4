"""The batch size the batched stage uses: ``--batch-size``, else the platform's advice, else (optimization level 2)
the fastest candidate measured on the loaded model and the real audio, cached by ``platform.tune``.

Only the batch size is tuned: every candidate decodes the same chunks with the same options, so the words do not
depend on the winner (rows of a batch are decoded independently; ``batch.BudgetedDecodingTask``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from whisper_subtitler.transcribe import TranscribeOptions
from whisper_subtitler.types import Audio

log = logging.getLogger(__name__)

CPU_CANDIDATES = (4, 8, 16)  # PERFORMANCE.md: above 8 adds little on the CPU; measured anyway
MIN_SAMPLE_CHUNKS = 4  # fewer chunks than this: nothing worth measuring, keep the advice


def batch_candidates(backend: str, advice: int, cap: int = 32) -> tuple[int, ...]:
    """Batch sizes to measure: ``CPU_CANDIDATES`` on the CPU; on a GPU half, the same and twice the advice
    (at most ``cap``), since the advice comes from a memory model, not from a measurement."""
    if backend == "cpu":
        return tuple(sorted(set(CPU_CANDIDATES) | {advice}))
    return tuple(sorted({max(1, advice // 2), advice, min(cap, advice * 2)}))


def choose_batch_size(
    model,
    audio: Audio,
    speech: Sequence[tuple[float, float]],
    options: TranscribeOptions,
    selection,
    *,
    model_name: str = "",
    requested: int | None = None,
) -> int:
    """The batch size for this run (see the module docstring). ``selection`` is a ``platform.Selection``.

    Level 2 measures at most ``max(candidates)`` chunks of ``audio`` per candidate (longest first); candidates
    that run out of memory are dropped; the winner is cached per device, driver, torch, dtype and model.
    """
    if requested is not None:
        return requested
    advice = selection.batch_size
    if selection.optimization_level < 2:
        return advice

    from whisper_subtitler.decoding.batched import ChunkTranscriber
    from whisper_subtitler.decoding.chunking import decoding_order, plan_chunks
    from whisper_subtitler.decoding.features import array_source, quietest_point
    from whisper_subtitler.platform import tune, tuning_key
    from whisper_subtitler.platform.batch import GPU_BATCH_CAP

    candidates = batch_candidates(selection.backend, advice, GPU_BATCH_CAP)
    source = array_source(audio.samples, audio.sample_rate)
    chunks = plan_chunks(speech, quietest=quietest_point(source))
    sample = decoding_order(chunks)[: max(candidates)]
    if len(sample) < MIN_SAMPLE_CHUNKS:
        log.info("level 2: %d chunks are too few to measure batch sizes; using %d", len(sample), advice)
        return advice
    probe = ChunkTranscriber(model, options, batch_size=1)
    language = probe.ensure_language(chunks[0], source)
    fixed = replace(options, language=language)
    gpu = selection.backend != "cpu"

    def measure(batch_size: int) -> None:
        transcriber = ChunkTranscriber(model, fixed, batch_size=batch_size)
        transcriber.transcribe(sample, source)
        if transcriber.batch_size != batch_size or transcriber.runner.on_cpu:
            raise RuntimeError(f"out of memory at batch {batch_size}")  # the runner shrank: not a fair measure
        if gpu:
            import torch

            torch.cuda.synchronize()

    key = tuning_key(selection, model=model_name or str(selection.model), setting="batch_size")
    result = tune(candidates, measure, key, baseline=advice, warmup=1 if gpu else 0, repeats=2 if gpu else 1)
    log.info("level 2: batch size %d (%s)", result.winner, "cached" if result.cached else result.seconds)
    return int(result.winner)
