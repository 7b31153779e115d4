"""The models of a run, each loaded once: Whisper with its transcriber, and the speaker diarization pipeline.

On an accelerator with too little memory for both (``diarize.memory.one_model_at_a_time``) only one of them is on
it at a time, in whisperX's order: transcribe, free Whisper, diarize, free the diarization pipeline; Whisper comes
back for the next file. Elsewhere both stay loaded for the whole batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from whisper_subtitler.diarize import DiarizationOptions, Diarizer
    from whisper_subtitler.models import ResolvedModel
    from whisper_subtitler.transcription import Decoding, TranscribeOptions, Transcriber

log = logging.getLogger(__name__)


class ModelHolder:
    """Loads and frees the run's models. ``model``: the Whisper name or path (``None``: the default model);
    ``decoding`` makes the transcriber, with ``options``; ``selection``: the ``platform.Selection`` (device,
    dtype); ``diarization``: the diarization options, ``None`` without diarization."""

    def __init__(
        self,
        model: str | None,
        decoding: Decoding,
        options: TranscribeOptions,
        selection: Any,
        diarization: DiarizationOptions | None = None,
        shared: ModelHolder | None = None,
    ) -> None:
        from whisper_subtitler.diarize.memory import one_model_at_a_time

        self.model, self.decoding, self.options, self.selection = model, decoding, options, selection
        self.diarization = diarization
        self.shared = shared
        self.exclusive = diarization is not None and one_model_at_a_time(
            selection.device, selection.device_info.total_memory
        )
        self._resolved: ResolvedModel | None = None
        self._whisper: Any = None
        self._transcriber: Transcriber | None = None
        self._diarizer: Diarizer | None = None

    @property
    def model_name(self) -> str:
        """The Whisper model's name as the transcripts carry it (resolving it when not done yet)."""
        return self.resolve().name

    def sharing(
        self, decoding: Decoding, options: TranscribeOptions, diarization: DiarizationOptions | None
    ) -> ModelHolder:
        """A holder for other decoding, transcription and speaker-count options that uses this holder's Whisper
        model and diarization pipeline (loaded here once, when first needed): the per-request options of a server.
        The caller keeps the model name, dtype and diarization model the same (``api.Subtitler.replace`` checks)."""
        assert diarization is None or self.diarization is not None, "no diarization pipeline to share"
        return ModelHolder(self.model, decoding, options, self.selection, diarization, shared=self)

    def resolve(self) -> ResolvedModel:
        """Where the Whisper checkpoint is (``models.resolve_model``, once). Raises ``ModelNotFoundError`` or
        ``ModelError`` (exit 3)."""
        if self.shared is not None:
            return self.shared.resolve()
        if self._resolved is None:
            from whisper_subtitler.models import resolve_model

            self._resolved = resolve_model(self.model)
            log.info("model %s from %s (%s)", self._resolved.name, self._resolved.source, self._resolved.path)
        return self._resolved

    def whisper(self) -> Any:
        """The openai-whisper model on the selected device and in its dtype, loaded when it is not there."""
        if self.shared is not None:
            return self.shared.whisper()
        if self._whisper is None:
            from whisper_subtitler import platform
            from whisper_subtitler.models import load_whisper

            self._whisper = platform.prepare_model(load_whisper(self.resolve(), device="cpu"), self.selection)
        return self._whisper

    def transcriber(self) -> Transcriber:
        """The run's ``Transcriber``, made by ``decoding`` once per loaded Whisper model."""
        if self._transcriber is None:
            self._transcriber = self.decoding.transcriber(self.whisper(), self.options, self.selection, self.model_name)
        return self._transcriber

    @contextmanager
    def diarizer(self) -> Iterator[Diarizer]:
        """The diarization pipeline on the selected device; with ``exclusive``, Whisper leaves the device first and
        the pipeline after use. Raises ``MissingRequirementError`` when it cannot be loaded."""
        from whisper_subtitler.diarize import load_diarizer
        from whisper_subtitler.diarize.memory import release_accelerator_memory

        assert self.diarization is not None, "a run without diarization has no diarizer"
        if self.shared is not None:
            if self.exclusive:
                self._transcriber = None  # the shared holder frees Whisper: keep no reference to it
            with self.shared.diarizer() as diarizer:
                yield diarizer.with_options(self.diarization)
            return
        if self.exclusive and self._whisper is not None:
            self._whisper = self._transcriber = None
            release_accelerator_memory(self.selection.device)
        if self._diarizer is None:
            self._diarizer = load_diarizer(self.diarization, self.selection.device)
        try:
            yield self._diarizer
        finally:
            if self.exclusive:
                self._diarizer.close()
                self._diarizer = None
