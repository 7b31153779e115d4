"""The settings the batched stage uses: the batch size (``--batch-size``, else the platform's advice, else at
optimization level 2 the fastest candidate measured on the loaded model and the real audio) and, at level 2, whether
the decoder kernels (``kernels``: output projection and cross-attention layout) are faster on this device than
openai-whisper's own code, which attention kernel SDPA should use (``kernels.attention_kernel``), and whether
``torch.compile`` of the decoder step (``compiled``) pays for its compilation.
Winners are cached by ``platform.tune``, so the next run measures nothing.

Every candidate decodes the same chunks with the same options, so the words do not depend on the winner (rows of a
batch are decoded independently, ``budgeted.BudgetedDecodingTask``; the kernels, the attention kernels and the compiled
step do the same arithmetic up to float rounding, ``tests/test_decoding_kernels.py``,
``tests/test_decoding_compiled.py``).

The compiled step is scored with its compilation spread over an hour of speech (``PAYBACK_WINDOWS`` windows,
``tune(amortize=...)``): compilation is paid again by every process. On the CPU it did not pay back, so there it is
measured once and cached as off (docs/performance.md). A candidate whose words differ from the first run's by more than
``MAX_WORD_CHANGE`` is dropped, however fast: the words must not depend on the winner.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Any

from whisper_subtitler.platform.batch_advice import CPU_BATCH  # the CPU's batch size
from whisper_subtitler.platform.machine import BackendName
from whisper_subtitler.transcription.protocol import TranscribeOptions
from whisper_subtitler.types import Audio

log = logging.getLogger(__name__)

CPU_CANDIDATES = (4, 8, 16)  # above 8 adds little on the CPU (docs/performance.md); measured anyway
MIN_SAMPLE_CHUNKS = 4  # fewer chunks than this: nothing worth measuring, keep the advice
MAX_WORD_CHANGE = 0.02  # a candidate whose words differ more from the first run's is dropped (fp16 rounding: less)
PAYBACK_WINDOWS = 120  # 30-s windows in an hour of speech: a one-time cost (compilation) must pay back within it

# torch.nn.attention.SDPBackend names worth measuring per backend. Not cuDNN's: the cudnn_attention_off step turns
# it off, as its plan builds for every new shape cost seconds a file (bench/notes/gpu-h200.md) that a warmed-up
# measurement would not see. Flash attention runs fp16 and bf16 only (attention_kernels).
ATTENTION_KERNELS = {
    BackendName.CUDA: ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"),
    BackendName.ROCM: ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"),
    BackendName.MPS: ("MATH",),
    BackendName.CPU: ("MATH",),  # PyTorch's own choice on the CPU is its flash kernel: no need to measure it twice
}


def attention_kernels(backend: BackendName | str, dtype: str) -> tuple[str, ...]:
    """The SDPA kernels to measure on ``backend`` in ``dtype``: ``ATTENTION_KERNELS``, without flash attention on a
    GPU in float32 (it has no float32 kernel, so pinning it would only fail)."""
    kernels = ATTENTION_KERNELS.get(BackendName(backend), ())
    if backend in (BackendName.CUDA, BackendName.ROCM) and dtype not in ("float16", "bfloat16"):
        kernels = tuple(k for k in kernels if k != "FLASH_ATTENTION")
    return kernels


@dataclass(frozen=True, slots=True)
class DecodingSettings:
    """How the batched stage decodes (chosen by ``choose_settings``): ``batch_size`` rows per batch;
    ``decoder_kernels``: on, off, or ``None`` for the device's default; ``compiled_decoder``: decoding steps through
    ``torch.compile``; ``attention``: the SDPA kernel, ``None`` for PyTorch's choice
    (see ``chunk_transcriber.ChunkTranscriber``)."""

    batch_size: int = CPU_BATCH
    decoder_kernels: bool | None = None
    compiled_decoder: bool = False
    attention: str | None = None


def batch_candidates(backend: str, advice: int, cap: int = 32) -> tuple[int, ...]:
    """Batch sizes to measure: ``CPU_CANDIDATES`` on the CPU; on a GPU half, the same and twice the advice
    (at most ``cap``), since the advice is sized by memory, not by speed."""
    if backend == BackendName.CPU:
        return tuple(sorted(set(CPU_CANDIDATES) | {advice}))
    return tuple(sorted({max(1, advice // 2), advice, min(cap, advice * 2)}))


def _pinned(kernel: str) -> str | None:
    return None if kernel == "auto" else kernel


def word_change(reference: Sequence[str], words: Sequence[str]) -> float:
    """The share of ``reference``'s words (0..1) that ``words`` does not keep in order (``difflib``'s matching
    blocks); 0 for equal lists, 1 when nothing matches or one side is empty and the other not."""
    if not reference and not words:
        return 0.0
    matched = sum(block.size for block in SequenceMatcher(None, reference, words, autojunk=False).get_matching_blocks())
    return 1.0 - matched / max(len(reference), len(words))


def _synchronize(device) -> None:
    """Wait for the accelerator's queued work (CUDA and ROCm share ``torch.cuda``; MPS has its own)."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def choose_settings(
    model,
    audio: Audio,
    speech: Sequence[tuple[float, float]],
    options: TranscribeOptions,
    selection,
    *,
    model_name: str = "",
    requested: int | None = None,
    trial: Callable[..., Any] | None = None,
) -> DecodingSettings:
    """The decoding settings for this run (see the module docstring). ``selection`` is a ``platform.Selection``;
    ``trial`` makes the transcriber each candidate is measured with (``chunk_transcriber.ChunkTranscriber``, passed
    in, since the batched stage calls this module); needed at level 2 only (``ValueError`` without it there).

    Level 2 measures at most ``max(candidates)`` chunks of ``audio`` per batch-size candidate (most speech first; a
    ``requested`` batch size is kept as it is), then one batch with the decoder kernels on and off, then with each
    attention kernel of the backend (``ATTENTION_KERNELS``) and PyTorch's choice, then eager and compiled (a
    first run, whose excess over the later ones, the compilation, is counted spread over an hour of speech, then
    timed runs); candidates that fail (out of memory, no compiler) are dropped; the winners are cached per device,
    driver, torch, dtype and model.
    """
    advice = requested if requested is not None else selection.batch_size
    if selection.optimization_level < 2 or not speech:
        return DecodingSettings(advice)

    from whisper_subtitler.decoding.chunking import decoding_order, plan_chunks
    from whisper_subtitler.decoding.features import array_source, quietest_point
    from whisper_subtitler.platform import tune, tuning_key
    from whisper_subtitler.platform.batch_advice import GPU_BATCH_CAP

    if trial is None:
        raise ValueError("level 2 measures decodings: choose_settings needs trial (chunk_transcriber.ChunkTranscriber)")
    candidates = (advice,) if requested is not None else batch_candidates(selection.backend, advice, GPU_BATCH_CAP)
    source = array_source(audio.samples, audio.sample_rate)
    chunks = plan_chunks(speech, quietest=quietest_point(source))
    sample = decoding_order(chunks)[: max(candidates)]
    if len(sample) < MIN_SAMPLE_CHUNKS:
        log.info("level 2: %d chunks are too few to measure; batch size %d", len(sample), advice)
        return DecodingSettings(advice)
    probe = trial(model, options, batch_size=1)
    language = probe.ensure_language(chunks[0], source)
    fixed = replace(options, language=language)
    gpu = selection.backend != BackendName.CPU
    name = model_name or str(selection.model)
    reference: dict[int, list[str]] = {}  # per number of chunks, the words of the first run over them

    def run(
        chunks: list,
        batch_size: int,
        decoder_kernels: bool | None = None,
        compiled: bool = False,
        attention: str | None = None,
    ) -> None:
        transcriber = trial(
            model,
            fixed,
            batch_size=batch_size,
            decoder_kernels=decoder_kernels,
            compiled_decoder=compiled,
            attention=attention,
            cpu_fallback=False,
        )
        words = [w for segment in transcriber.transcribe(chunks, source) for w in segment.text.split()]
        if transcriber.batch_size != batch_size:
            raise RuntimeError(f"out of memory at batch {batch_size}")  # the runner shrank: not a fair measure
        _synchronize(model.device)
        first = reference.setdefault(len(chunks), words)
        if (changed := word_change(first, words)) > MAX_WORD_CHANGE:  # a faulty kernel, not just a faster one
            raise RuntimeError(f"{changed:.0%} of the words differ from those of the first run")

    warmup, repeats = (1, 2) if gpu else (0, 1)
    batch_size = advice
    if len(candidates) > 1:
        result = tune(
            candidates,
            lambda b: run(sample, b),
            tuning_key(selection, model=name, setting="batch_size"),
            baseline=advice,
            warmup=warmup,
            repeats=repeats,
        )
        log.info("level 2: batch size %d (%s)", result.winner, "cached" if result.cached else result.seconds)
        batch_size = int(result.winner)
    measured = sample[:batch_size]

    default = model.device.type == "cpu"  # ChunkTranscriber's default
    result = tune(
        [default, not default],
        lambda on: run(measured, batch_size, on),
        tuning_key(selection, model=name, setting=f"decoder_kernels@{batch_size}"),
        baseline=default,
        warmup=warmup,
        repeats=repeats,
    )
    log.info(
        "level 2: decoder kernels %s (%s)",
        "on" if result.winner else "off",
        "cached" if result.cached else result.seconds,
    )
    kernels = bool(result.winner)

    # "auto": PyTorch's own choice, the baseline (tune() needs a baseline that is not None)
    setting = f"attention@{batch_size},kernels={kernels}"
    result = tune(
        ["auto", *attention_kernels(selection.backend, selection.dtype)],
        lambda kernel: run(measured, batch_size, kernels, attention=_pinned(kernel)),
        tuning_key(selection, model=name, setting=setting),
        baseline="auto",
        warmup=warmup,
        repeats=repeats,
    )
    log.info("level 2: attention kernel %s (%s)", result.winner, "cached" if result.cached else result.seconds)
    attention = _pinned(result.winner)

    # compilation is paid once per process: spread over the windows of an hour of speech, in runs of `measured`
    setting = f"compiled_decoder@{batch_size},kernels={kernels},attention={result.winner}"
    result = tune(
        [False, True],
        lambda on: run(measured, batch_size, kernels, on, attention),
        tuning_key(selection, model=name, setting=setting),
        baseline=False,
        warmup=1,
        repeats=repeats,
        amortize=max(1, PAYBACK_WINDOWS // len(measured)),
    )
    log.info(
        "level 2: compiled decoder step %s (%s)",
        "on" if result.winner else "off",
        "cached" if result.cached else result.seconds,
    )
    return DecodingSettings(batch_size, kernels, bool(result.winner), attention)
