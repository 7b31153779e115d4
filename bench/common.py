"""Helpers shared by the bench scripts (not an entry point): the CTranslate2 folder of a model's wheel for
faster-whisper, WER after openai-whisper's ``EnglishTextNormalizer``, this process's peak RSS, and a JSON record
written to ``--out`` or stdout.

Each bench script runs as ``python bench/NAME.py``, so ``bench/`` is first on ``sys.path`` and ``import common``
finds this file.
"""

from __future__ import annotations

import json
import resource
import shutil
import sys
from pathlib import Path
from typing import Any


def ct2_folder(model: str, work: Path) -> Path:
    """The model's CTranslate2 folder from its wheel (split wheels joined once into ``work``)."""
    from whisper_subtitler.models import wheels

    provider = wheels.PROVIDERS[model]
    if not provider.installed():
        raise SystemExit(f"{model}: install {provider.package} (make install-test)")
    target = work / "ct2" / model
    if (target / "model.bin").is_file():
        return target
    with provider.folder() as folder:
        if len(provider.parts) == 1:
            return Path(folder)
        shutil.copytree(folder, target)
    return target


def batched_faster_whisper(model: str, work: Path, threads: int) -> dict[str, Any]:
    """faster-whisper's ``BatchedInferencePipeline`` on the model's CTranslate2 folder (``ct2_folder``), on the CPU with
    ``threads`` threads, in int8 and float32: ``{"faster-whisper-int8": ..., "faster-whisper-float32": ...}``."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    ct2 = ct2_folder(model, work)
    return {
        f"faster-whisper-{ct}": BatchedInferencePipeline(
            WhisperModel(str(ct2), device="cpu", compute_type=ct, cpu_threads=threads, num_workers=1)
        )
        for ct in ("int8", "float32")
    }


def english_normalizer() -> Any:
    """openai-whisper's ``EnglishTextNormalizer``, what every WER of the bench is computed after."""
    from whisper.normalizers import EnglishTextNormalizer

    return EnglishTextNormalizer()


def wer(reference: str, hypothesis: str) -> float:
    """jiwer's WER of ``hypothesis`` against ``reference``, both after ``english_normalizer()``."""
    import jiwer

    normalize = english_normalizer()
    return float(jiwer.wer(normalize(reference), normalize(hypothesis)))


def peak_rss_bytes() -> int:
    """Peak resident set size of this process in bytes (``ru_maxrss`` is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def write_json(data: Any, out: Path | None, *, indent: int = 1, ensure_ascii: bool = True, echo: bool = False) -> str:
    """``data`` as JSON into ``out`` (UTF-8, with a final newline), or on stdout without ``out``; ``echo``: on
    stdout as well. Returns the text (without the newline)."""
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    if out:
        out.write_text(text + "\n", encoding="utf-8")
    if echo or not out:
        print(text)
    return text
