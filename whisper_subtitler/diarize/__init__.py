"""Speaker diarization: who speaks when, as speaker turns, with pyannote.audio 4.

    options = DiarizationOptions(num_speakers=2)        # validated: UsageError (exit 2)
    preflight(options)                                 # before transcribing: MissingRequirementError (exit 3)
    with load_diarizer(options, device="cpu") as diarize:  # the same errors, each with the fix
        turns = diarize(audio)                         # tuple[SpeakerTurn, ...], SPEAKER_00, SPEAKER_01...

Modules, in the order a run uses them: :mod:`.options` (pure), :mod:`.load` (which pipeline: hub, local
folder or the embedded default), :mod:`.embedded` (segmentation-3.0 + CAM++ offline pipeline),
:mod:`.campplus` (the CAM++ embedding as a pyannote model), :mod:`.pyannote_compat` (every workaround for
pyannote and torchaudio, telemetry off). Importing this package imports neither torch nor pyannote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from whisper_subtitler.diarize.options import DiarizationOptions

if TYPE_CHECKING:
    from whisper_subtitler.diarize.load import Diarizer

__all__ = ["DiarizationOptions", "Diarizer", "load_diarizer", "preflight"]


def load_diarizer(options: DiarizationOptions, device: str = "cpu") -> Diarizer:
    """Load the speaker diarization pipeline ``options`` asks for (see ``diarize.load.load_diarizer``)."""
    from whisper_subtitler.diarize.load import load_diarizer as _load

    return _load(options, device)


def preflight(options: DiarizationOptions) -> str:
    """Check that the pipeline can be loaded, without loading it (see ``diarize.load.preflight``)."""
    from whisper_subtitler.diarize.load import preflight as _preflight

    return _preflight(options)


def __getattr__(name: str):
    if name == "Diarizer":
        from whisper_subtitler.diarize.load import Diarizer

        return Diarizer
    raise AttributeError(name)
