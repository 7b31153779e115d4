"""The ``serve`` command: ``whisper-subtitler serve``, subtitles over HTTP on whisper-asr-webservice's API.

Registered on the application in ``cli.app``. The models are loaded before the port is opened, so that a client
never waits for them; the server is ``whisper_subtitler.serve`` (the optional extra ``whisper-subtitler[serve]``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from whisper_subtitler.cli.console import err, fail, setup_logging
from whisper_subtitler.cli.library import StateDir
from whisper_subtitler.cli.options import (
    BatchSize,
    ComputeType,
    ComputeTypeOption,
    DiarizationModel,
    Diarize,
    GpuBackend,
    Model,
    NoBatch,
    Quiet,
    Threads,
    Verbose,
    Voices,
    VoicesDir,
)
from whisper_subtitler.errors import ExitCode, MissingRequirementError, SubtitlerError, UsageError
from whisper_subtitler.options import DecodingOptions, DeviceOptions, SpeakerOptions

EXTRA_MODULES = ("fastapi", "uvicorn", "python_multipart")

Host = Annotated[
    str,
    typer.Option(
        "--host", help="Address to listen on. 0.0.0.0 (all interfaces) lets other machines in: set --api-key then."
    ),
]
Port = Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port (whisper-asr-webservice's is 9000).")]
Workers = Annotated[
    int,
    typer.Option(
        "--workers",
        min=1,
        help="Jobs that run at once, each with its own copy of the models on the device; more requests wait in line.",
    ),
]
ApiKey = Annotated[
    Optional[str],  # noqa: UP045 (Typer reads it at run time)
    typer.Option(
        "--api-key",
        envvar="WHISPER_SUBTITLER_API_KEY",
        show_default=False,
        help="Require this key in the X-API-Key header of /asr, /detect-language and /jobs (401 without, 403 wrong; "
        "/webhook also takes ?api_key=). "
        "Also $WHISPER_SUBTITLER_API_KEY, which other users cannot read in the process list.",
    ),
]
Library = Annotated[
    Optional[list[Path]],  # noqa: UP045
    typer.Option(
        "--library",
        metavar="DIR",
        file_okay=False,
        show_default=False,
        help="A folder whose files POST /jobs and the webhook may name (repeat for several); any other path is "
        "refused with 403. Without one, jobs take uploads only.",
    ),
]
PathMap = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--path-map",
        metavar="FROM=TO",
        show_default=False,
        help="FROM=TO: rewrite the start of the paths jobs and webhooks send (Sonarr in another container sees "
        "/tv where this server sees /media/tv: --path-map /tv=/media/tv). Repeatable.",
    ),
]
SidecarTemplate = Annotated[
    str,
    typer.Option(
        "--name-template",
        help="Name of the SRT a webhook's job writes beside the media file, without extension: {stem}, {lang} "
        "(ISO 639-1), {lang3} (639-2/B) as transcribe's --name-template. An existing file is never replaced.",
    ),
]
MaxUploadMb = Annotated[
    float,
    typer.Option("--max-upload-mb", min=0.001, help="Largest upload in MiB; a larger one is refused with 413."),
]


def shared_cores(workers: int) -> int | None:
    """PyTorch's CPU threads per worker when several share the machine: the cores divided among them (``None``
    for one worker: PyTorch's default, as ``transcribe`` has). More threads than cores in all slows every job."""
    return max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None


def serve(
    host: Host = "127.0.0.1",
    port: Port = 9000,
    model: Model = None,
    diarize: Diarize = None,
    diarization_model: DiarizationModel = None,
    voices: Voices = False,
    voices_dir: VoicesDir = None,
    workers: Workers = 1,
    api_key: ApiKey = None,
    max_upload_mb: MaxUploadMb = 2048.0,
    gpu_backend: GpuBackend = None,
    compute_type: ComputeTypeOption = ComputeType.AUTO,
    batch_size: BatchSize = None,
    no_batch: NoBatch = False,
    threads: Threads = None,
    library: Library = None,
    path_map: PathMap = None,
    state_dir: StateDir = None,
    name_template: SidecarTemplate = "{stem}.{lang}",
    verbose: Verbose = 0,
    quiet: Quiet = False,
) -> None:
    """Serve subtitles over HTTP: POST /asr and /detect-language as whisper-asr-webservice (Bazarr's Whisper
    provider), asynchronous jobs for long files (/jobs, kept in the --state-dir queue), a webhook for Sonarr and
    Radarr (/webhook), GET /health, API docs at /docs. SIGTERM or Ctrl-C: running requests finish, running jobs are
    queued again, then exit 0."""
    setup_logging(verbose, quiet)
    try:
        missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
        if missing:
            raise MissingRequirementError(
                f"serve needs {', '.join(missing)}", hint='pip install "whisper-subtitler[serve]"'
            )
        from whisper_subtitler.library.queue import default_state_dir
        from whisper_subtitler.serve.app import ServeOptions
        from whisper_subtitler.serve.server import listen, run_server, start_jobs, start_service
        from whisper_subtitler.serve.upload import MB
        from whisper_subtitler.serve.webhooks import parse_path_map
        from whisper_subtitler.serve.workers import WorkerSettings

        if api_key is not None and not api_key.strip():
            raise UsageError("--api-key is empty", hint="give a key, or leave the option out for none")
        libraries = tuple(folder.absolute() for folder in library or ())
        for folder in libraries:
            if not folder.is_dir():
                raise UsageError(f"--library {folder}: not a folder")
        try:
            maps = tuple(parse_path_map(text) for text in path_map or ())
        except ValueError as e:
            raise UsageError(f"--path-map {e}") from None
        sock = listen(host, port)  # a port in use fails before the models are loaded
        settings = WorkerSettings(
            decoding=DecodingOptions(
                model=model, batched=not no_batch, batch_size=batch_size, compute_type=compute_type.value
            ),
            speakers=SpeakerOptions(
                diarize=diarize, model=diarization_model, voices=voices, voices_dir=voices_dir, voices_session=False
            ),
            device=DeviceOptions(
                backend=gpu_backend.value if gpu_backend is not None else None,
                threads=threads or shared_cores(workers),
            ),
            log_level=logging.ERROR if quiet else (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)],
        )
        options = ServeOptions(
            api_key=api_key, max_upload_bytes=int(max_upload_mb * MB), libraries=libraries, path_maps=maps
        )
        try:
            service = start_service(workers, settings, options)
            try:
                start_jobs(service, state_dir or default_state_dir(), name_template)
            except BaseException:
                for worker in service.queue.workers:
                    worker.stop()
                raise
        except BaseException:
            sock.close()
            raise
    except SubtitlerError as e:
        raise fail(e) from None
    except KeyboardInterrupt:
        err.print("interrupted while loading the models", highlight=False)
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    bound = sock.getsockname()[1]
    health = service.health()
    if not quiet:
        err.print(
            f"serving on http://{host}:{bound} (model {health['model']} on {health['device']}, "
            f"{workers} worker{'s' if workers > 1 else ''}, diarization {'on' if health['diarize'] else 'off'}"
            f"{', API key required' if api_key else ''}"
            f"{'' if service.jobs is None else f', jobs in {service.jobs.state_dir}'}); API docs at /docs",
            highlight=False,
            soft_wrap=True,
        )
    run_server(service, sock, log_level=logging.ERROR if quiet else logging.INFO)
