"""Level 2: pick a speed setting by measuring it on the loaded model, and cache the winner.

The caller (the transcription stage) supplies the candidates and a ``measure`` function; this module times,
compares against the level-1 baseline and remembers the winner per device, driver, torch version and model in
``$XDG_CACHE_HOME/whisper-subtitler/tuning.json``, so the next run reads it instead of measuring::

    key = tuning_key(selection, model="base", setting="batch_size")
    result = tune([4, 8, 16, 32], lambda b: decode_windows(sample_windows, batch_size=b), key,
                  baseline=selection.batch_size)
    batch_size = result.winner

Only settings that change speed belong here (batch size, cuDNN benchmark, attention kernel, compilation): never
anything that changes the words beyond float rounding (the caller checks the words of each candidate). No torch
import.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whisper_subtitler.platform.select import Selection

log = logging.getLogger(__name__)

CACHE_VERSION = 1
MIN_GAIN = 0.05  # a candidate must beat the baseline by 5 %: repeat runs differ by 5-8 % (docs/performance.md)


def cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/whisper-subtitler/tuning.json`` (``~/.cache`` when ``XDG_CACHE_HOME`` is unset)."""
    env = os.environ if environ is None else environ
    root = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "whisper-subtitler" / "tuning.json"


def tuning_key(selection: Selection, model: str, setting: str) -> dict[str, str]:
    """The cache key of a setting: device name, driver, toolkit, torch version, dtype, model and setting name."""
    machine = selection.machine
    return {
        "setting": setting,
        "model": model,
        "backend": selection.backend,
        "device": selection.device_info.name,
        "driver": (machine.driver_version if machine else None) or "none",
        "toolkit": (machine.cuda_version or machine.hip_version if machine else None) or "none",
        "torch": (machine.torch_version if machine else None) or "none",
        "dtype": selection.dtype,
    }


@dataclass(frozen=True)
class TuneResult:
    """The chosen candidate. ``cached``: read from the cache, nothing measured; ``seconds``: score per measured
    candidate (``repr`` of the candidate -> seconds: the best time, plus the amortized one-time cost with
    ``tune(amortize=...)``); ``failed``: candidates whose measure raised."""

    winner: Any
    cached: bool
    key: str
    seconds: dict[str, float] = field(default_factory=dict)
    failed: tuple[str, ...] = ()


def _key_text(cache_key: Mapping[str, str] | str) -> str:
    return cache_key if isinstance(cache_key, str) else json.dumps(dict(cache_key), sort_keys=True)


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable tuning cache %s: %s", path, exc)
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def _write_cache(path: Path, key: str, entry: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        entries = _read_cache(path)  # re-read: another run may have added entries meanwhile
        entries[key] = entry
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp", encoding="utf-8") as f:
            json.dump({"version": CACHE_VERSION, "entries": entries}, f, indent=1, sort_keys=True)
        os.replace(f.name, path)  # atomic: a concurrent reader sees the old or the new file
    except OSError as exc:
        log.warning("could not write the tuning cache %s: %s", path, exc)


def tune(
    candidates: Sequence[Hashable],
    measure: Callable[[Any], object],
    cache_key: Mapping[str, str] | str,
    *,
    baseline: Any = None,
    repeats: int = 2,
    warmup: int = 1,
    min_gain: float = MIN_GAIN,
    amortize: int | None = None,
    path: Path | None = None,
    timer: Callable[[], float] = time.perf_counter,
) -> TuneResult:
    """Return the fastest of ``candidates`` (JSON-serializable values), from the cache when it has one.

    ``measure(candidate)`` must do the same work for every candidate (e.g. decode the same 16 windows in
    batches of ``candidate``) and return only when the work is done (call ``torch.cuda.synchronize()``
    inside on a GPU). Each candidate runs ``warmup`` untimed times, then ``repeats`` timed ones; its score
    is the fastest repeat in seconds. ``baseline`` (the level-1 value, measured too) wins unless another
    candidate is faster by more than ``min_gain`` (the run-to-run noise), so level 2 is never slower than
    level 1 by more than the noise. A candidate whose ``measure`` raises (out of memory, ...) is dropped with
    a warning; when all fail, ``baseline`` (else the first candidate) is returned and nothing is cached.

    ``amortize``: for candidates with a one-time cost (``torch.compile``), the first warm-up is timed too, and its
    excess over the fastest repeat, spread over ``amortize`` runs of ``measure``, is added to the score (needs
    ``warmup`` >= 1), so a candidate wins only if it pays its cost back within that many runs.
    """
    if not candidates:
        raise ValueError("tune() needs at least one candidate")
    if amortize is not None and (amortize < 1 or warmup < 1):
        raise ValueError("tune(amortize=...) needs amortize >= 1 and warmup >= 1")
    key = _key_text(cache_key)
    path = cache_path() if path is None else path
    pool = list(candidates)
    if baseline is not None and baseline not in pool:
        pool.insert(0, baseline)

    entry = _read_cache(path).get(key)
    if entry is not None and entry.get("winner") in pool:
        log.info("tuning %s: cached winner %r (%s)", key, entry["winner"], path)
        return TuneResult(entry["winner"], True, key, dict(entry.get("seconds", {})))

    seconds: dict[str, float] = {}
    scores: list[tuple[float, Any]] = []
    failed: list[str] = []
    for candidate in pool:
        try:
            first = None
            for _ in range(warmup):
                start = timer()
                measure(candidate)
                first = timer() - start if first is None else first
            times = []
            for _ in range(max(1, repeats)):
                start = timer()
                measure(candidate)
                times.append(timer() - start)
        except Exception as exc:  # noqa: BLE001 - e.g. torch.OutOfMemoryError for a batch too large
            log.warning("tuning: candidate %r failed (%s); skipping it", candidate, exc)
            failed.append(repr(candidate))
            continue
        score = min(times)
        if amortize is not None and first is not None:  # first is set: amortize needs warmup >= 1
            log.info(
                "tuning: candidate %r: first run %.4f s, then %.4f s; its excess counted over %d runs",
                candidate,
                first,
                score,
                amortize,
            )
            score += max(0.0, first - score) / amortize
        seconds[repr(candidate)] = score
        scores.append((score, candidate))
        log.info("tuning: candidate %r took %.4f s", candidate, score)

    if not scores:
        fallback = baseline if baseline is not None else pool[0]
        log.warning("tuning: every candidate failed; keeping %r", fallback)
        return TuneResult(fallback, False, key, seconds, tuple(failed))
    best_time, winner = min(scores, key=lambda s: s[0])
    base_time = seconds.get(repr(baseline)) if baseline is not None else None
    if base_time is not None and best_time > base_time * (1 - min_gain):
        winner = baseline  # not faster than level 1 by more than the noise
    entry = {
        "winner": winner,
        "seconds": seconds,
        "failed": failed,
        "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _write_cache(path, key, entry)
    log.info("tuning %s: winner %r, cached in %s", key, winner, path)
    return TuneResult(winner, False, key, seconds, tuple(failed))
