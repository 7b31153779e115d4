"""A ``transcribe`` batch whose inputs all fail their check, answered at once: no device probed, no model loaded.

Before its first file, ``transcribe`` probes the machine (torch), checks the diarization pipeline (pyannote.audio)
and loads Whisper, so that a bad ``--model`` ends the run once instead of failing every file. When no input can be
read at all (missing, a directory, empty, not a regular file, unreadable: ``inputs.check_input``), that is seconds
of work to say "no such file". ``unreadable_batch`` sees this first, and returns a stand-in for the pipeline whose
every file fails with its reason, the same lines on stderr, the same ``--json`` summary and exit code 1
(``runner.BatchSummary.exit_code``).

The checks that could end the run with their own exit code still come first, as they would in a full run: every
option (``cli.args.TranscribeArgs.subtitler_options``, exit 2); the device when the request can fail or warn (a
backend, a dtype or ``--no-fallback`` asked for, by flag, environment or env file; exits 2 and 4), and the
diarization pipeline when speakers are asked for (exit 3). The full path is taken whenever a file could come out
otherwise than failed: one input passes the check, one of its outputs exists (it may be skipped), or ``--burn-in``
(which checks ffmpeg's subtitle filter first), ``--dry-run`` or Ray are asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from whisper_subtitler.cli.options import ExecutorName
from whisper_subtitler.errors import InputError
from whisper_subtitler.inputs import check_input

if TYPE_CHECKING:
    from whisper_subtitler.cli.args import SubtitlerOptions, TranscribeArgs
    from whisper_subtitler.results import FileResult

__all__ = ["UnreadableInputs", "unreadable_batch"]


class UnreadableInputs:
    """Stands in for the ``Pipeline`` of a batch whose every input fails its check (``cli.app.run_pipeline``): each
    file's ``process`` raises its ``InputError``, which the runner makes the file's ``failed`` result; there is
    nothing to load, prefetch or close."""

    prefetch = None  # no audio to prepare ahead

    def __init__(self, errors: Mapping[Path, InputError]) -> None:
        self.errors = dict(errors)

    def load(self, sources: Iterable[Path] = ()) -> None:
        """Nothing to load."""

    def process(self, source: Path, on_stage: object = None) -> FileResult:
        """Raise ``source``'s ``InputError``."""
        raise self.errors[source]

    def close(self) -> None:
        """Nothing to stop."""


def unreadable_batch(args: TranscribeArgs, sources: Sequence[Path]) -> UnreadableInputs | None:
    """The stand-in pipeline when every one of ``sources`` fails ``inputs.check_input`` and none could be skipped,
    once the checks that could end the run first have passed (see the module docstring); ``None`` when the batch
    needs the real pipeline. Raises what those checks raise: ``UsageError`` (exit 2), ``BackendUnavailableError``
    (exit 4), ``MissingRequirementError`` (exit 3)."""
    ray_options = (args.ray_address, args.devices, args.cpus_per_worker)
    ray = args.executor is not ExecutorName.LOCAL or any(value is not None for value in ray_options)
    if args.dry_run or args.burn_in or ray:
        return None
    errors: dict[Path, InputError] = {}
    for source in sources:
        try:
            check_input(source)
        except InputError as error:
            if not args.overwrite and any(target.exists() for target in args.targets(source)):
                return None  # skipped, not failed, when all of them exist: the pipeline decides
            errors[source] = error
        else:
            return None
    _check_requirements(args.subtitler_options())
    return UnreadableInputs(errors)


def _check_requirements(options: SubtitlerOptions) -> None:
    """What ``Subtitler`` checks before loading a model, where it can end the run: the speaker options against the
    formats (``rttm`` without diarization: ``UsageError``), the device when the request can fail or warn
    (``platform.configure``), the diarization pipeline when speakers are asked for (``options.check_diarization``)."""
    from whisper_subtitler import platform
    from whisper_subtitler.options import check_diarization
    from whisper_subtitler.platform.machine import BackendName

    diarization, _ = options.speakers.diarization(options.output.formats)
    device, compute_type = options.device, options.decoding.compute_type
    request = platform.requested(
        device.backend, device.optimization_level, not device.fallback, device.env_file, compute_type
    )
    asked = request.backend is not BackendName.AUTO or request.no_fallback or request.compute_type != "auto"
    if asked or request.warnings:
        device.select(options.decoding.model, compute_type)  # probes the machine: torch
    if diarization is not None and diarization.required:
        check_diarization(diarization)  # imports pyannote.audio
