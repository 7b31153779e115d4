"""The HTTP application: whisper-asr-webservice's endpoints and parameters, answered by ``Subtitler`` workers.

``POST /asr`` and ``POST /detect-language`` take the media as the multipart field ``audio_file`` and the options as
query parameters, with whisper-asr-webservice's names and defaults (``output=txt``, ``encode=true``,
``task=transcribe``); this project's own options are further optional query parameters. A failure is answered as
JSON ``{"detail": message, "hint": hint}``, ``message`` being the one line the command line prints for the same
cause (the uploaded file named as the client named it): 400 for media that cannot be decoded, 401/403 for a missing
or wrong API key, 413 for an upload over the limit, 422 for bad parameters, 503 while the server stops.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional
from urllib.parse import quote

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.security import APIKeyHeader

from whisper_subtitler.errors import InputError, SubtitlerError, UsageError
from whisper_subtitler.options import AudioOptions, CueOptions, OutputOptions, SpeakerOptions, subtitle_options
from whisper_subtitler.serve.jobs import Cancelled, JobQueue, ShuttingDown
from whisper_subtitler.serve.upload import FIELD, MB, RequestError, Upload, receive_upload
from whisper_subtitler.serve.workers import Worker, peak_rss_mb
from whisper_subtitler.version import __version__
from whisper_subtitler.writers import FORMATS

if TYPE_CHECKING:
    from whisper_subtitler.api import Subtitler
    from whisper_subtitler.serve.async_jobs import AsyncJobs

log = logging.getLogger(__name__)

API_KEY_HEADER = "X-API-Key"
KEY_HEADER = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, description="the server's --api-key")
ENGINE = "whisper-subtitler"  # the Asr-Engine header whisper-asr-webservice sends with its replies
MEDIA_TYPES = {"json": "application/json"}  # the others are text/plain, as whisper-asr-webservice answers
UPLOAD_BODY: dict[str, Any] = {  # the request body in the OpenAPI page (the body is parsed by upload.receive_upload)
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [FIELD],
                    "properties": {FIELD: {"type": "string", "format": "binary", "description": "the media file"}},
                }
            }
        },
    }
}
ERROR_REPLY = {"content": {"application/json": {"example": {"detail": "what went wrong", "hint": "what to do"}}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"description": text, **ERROR_REPLY}
    for status, text in {
        400: "the media cannot be decoded (empty, not media, truncated)",
        401: "the API key is missing",
        403: "the API key is wrong",
        413: "the upload is over --max-upload-mb",
        422: "a parameter is invalid",
        503: "the server is stopping",
    }.items()
}


@dataclass(frozen=True)
class ServeOptions:
    """The server's settings: ``api_key`` required in the ``X-API-Key`` header (``None``: none required),
    ``max_upload_bytes`` the largest upload; ``libraries`` the folders whose files jobs and webhooks may name
    (``--library``), ``path_maps`` the ``(FROM, TO)`` starts of paths rewritten first (``--path-map``)."""

    api_key: str | None = None
    max_upload_bytes: int = 2048 * MB
    libraries: tuple[Path, ...] = ()
    path_maps: tuple[tuple[str, str], ...] = ()


class Service:
    """What the endpoints share: the workers' queue (``jobs.JobQueue`` of ``workers.Worker`` processes, each with
    its own loaded models), a ``template`` ``Subtitler`` with the workers' options (nothing loaded) that checks each
    request's options before its upload is read, and the settings."""

    def __init__(self, workers: Sequence[Worker], template: Subtitler, options: ServeOptions = ServeOptions()) -> None:
        self.template = template
        self.queue: JobQueue[Worker] = JobQueue(workers)
        self.options = options
        self.jobs: AsyncJobs | None = None  # set by the server when it runs the state directory's jobs

    def template_changes(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``Subtitler.replace`` arguments of an asynchronous job's ``params`` (``job_routes.job_params``; the
        others at the server's defaults). Raises ``UsageError`` for bad values."""
        defaults: dict[str, Any] = {
            "task": "transcribe",
            "language": None,
            "initial_prompt": None,
            "word_timestamps": False,
            "diarize": None,
            "num_speakers": None,
            "min_speakers": None,
            "max_speakers": None,
            "speaker_names": None,
        }
        unknown = set(params) - set(defaults)
        if unknown:
            raise UsageError(f"unknown job option(s): {', '.join(sorted(unknown))}")
        return request_changes(
            self.template,
            output="srt",
            **{**defaults, **params},
            speaker_style="change",
            max_line_width=CueOptions.max_line_width,
            max_lines=CueOptions.max_lines,
            max_cps=CueOptions.max_cps,
            fps=CueOptions.fps,
        )

    def health(self) -> dict[str, Any]:
        """``GET /health``'s reply: the state, the model, the queue's counts and the peak resident memory (MiB) of
        the server process and of each worker (the sum bounds what they held at once)."""
        workers = self.queue.workers
        info = workers[0].info
        peaks = [w.peak_rss_mb for w in workers]
        return {
            "status": "stopping" if self.queue.closing else "ok",
            "version": __version__,
            "model": info["model"],
            "device": info["device"],
            "diarize": info["diarize"],
            "workers": len(workers),
            **dataclasses.asdict(self.queue.counts),
            "peak_rss_mb": round(peak_rss_mb() + sum(peaks), 1),
            "peak_rss_mb_workers": peaks,
            "jobs": self.jobs is not None,
        }


def error_reply(status: int, error: SubtitlerError) -> JSONResponse:
    return JSONResponse({"detail": error.message, "hint": error.hint}, status_code=status)


def status_of(error: SubtitlerError) -> int:
    """The HTTP status of an expected failure: 422 for options (``UsageError``), 400 for the media
    (``InputError``), the request's own for ``RequestError``, else 500 (a missing requirement on the server)."""
    if isinstance(error, RequestError):
        return error.status
    if isinstance(error, UsageError):
        return 422
    if isinstance(error, InputError):
        return 400
    return 500


def validation_message(error: RequestValidationError) -> str:
    """FastAPI's list of validation errors as one line: ``max_speakers: Input should be a valid integer ...``."""
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p not in ("query", "header", "body"))
        parts.append(f"{where}: {item.get('msg', 'invalid')}" if where else str(item.get("msg", "invalid")))
    return "; ".join(parts) or "invalid request"


def renamed(error: SubtitlerError, upload: Upload) -> SubtitlerError:
    """``error`` with the temporary file's path replaced by the name the client gave (the same exception)."""
    for old in (f"file:{upload.path}", str(upload.path), str(upload.folder)):  # ffmpeg's name for it, then ours
        error.message = error.message.replace(old, upload.name)
        error.hint = error.hint.replace(old, upload.name) if error.hint else error.hint
    error.args = (error.message,)
    return error


async def disconnected(request: Request) -> None:
    """Completes when the client closes the connection (ASGI ``http.disconnect``); the body was read before."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def request_changes(
    template: Subtitler,
    *,
    output: str,
    task: str,
    language: str | None,
    initial_prompt: str | None,
    word_timestamps: bool,
    diarize: bool | None,
    num_speakers: int | None,
    min_speakers: int | None,
    max_speakers: int | None,
    speaker_names: str | None,
    speaker_style: str,
    max_line_width: int,
    max_lines: int,
    max_cps: float,
    fps: float,
    channels: str = "auto",
) -> dict[str, Any]:
    """The keyword arguments of ``Subtitler.replace`` for one request, checked (``template.replace``): raises
    ``UsageError`` with the command line's message for invalid values or combinations."""
    from whisper_subtitler.speakers import parse_speaker_names

    if output not in FORMATS:  # one format per reply: not "all" nor a list
        raise UsageError(f"unknown output format {output!r}", hint=f"choose one of {', '.join(FORMATS)}")
    cues, _ = subtitle_options(
        max_line_width=max_line_width,
        max_lines=max_lines,
        max_cps=max_cps,
        fps=fps,
        word_level=word_timestamps,
        bom=False,
        crlf=False,
        speaker_style=speaker_style,
    )
    changes: dict[str, Any] = {
        "decoding": dataclasses.replace(
            template.decoding, language=language, task=task, initial_prompt=initial_prompt or None
        ),
        "speakers": SpeakerOptions(
            diarize=diarize,
            num_speakers=num_speakers,
            min_speakers=min_speakers,
            max_speakers=max_speakers,
            model=template.speakers.model,
            names=parse_speaker_names(speaker_names) if speaker_names else (),
            voices=template.speakers.voices and diarize is not False,  # the server's --voices, each request alone
            voices_dir=template.speakers.voices_dir if diarize is not False else None,
            voices_session=False,
        ),
        "cues": cues,
        "output": OutputOptions(formats=(output,), word_level=word_timestamps),
        "audio": AudioOptions(channels=channels),
    }
    template.replace(**changes)
    return changes


def worker_job(upload: Upload, request: tuple):
    """The work of one request for a worker: ``request`` (``workers.Worker.call``) on ``upload``, whose temporary
    file is removed when it ends, and whose path in an error message becomes the client's name for it."""

    def job(worker: Worker, cancel: threading.Event) -> Any:
        try:
            return worker.call(request, cancel)
        except SubtitlerError as e:
            raise renamed(e, upload) from None
        finally:
            upload.discard()

    return job


def create_app(service: Service) -> FastAPI:
    """The FastAPI application serving ``service``."""
    app = FastAPI(
        title="whisper-subtitler",
        version=__version__,
        description="Subtitles from video and audio with Whisper and speaker diarization, on the API of "
        "whisper-asr-webservice (Bazarr's Whisper provider works unchanged). docs/serve.md has the details.",
    )

    def check_key(key: Annotated[Optional[str], Depends(KEY_HEADER)]) -> None:  # noqa: UP045 (FastAPI reads it)
        expected = service.options.api_key
        if expected is None:
            return
        if not key:
            raise RequestError(401, f"the {API_KEY_HEADER} header is missing", hint="send the server's API key")
        if not hmac.compare_digest(key.encode(), expected.encode()):
            raise RequestError(403, f"the {API_KEY_HEADER} header does not hold the server's API key")

    @app.exception_handler(SubtitlerError)
    async def expected_failure(request: Request, error: SubtitlerError) -> JSONResponse:
        return error_reply(status_of(error), error)

    @app.exception_handler(RequestValidationError)
    async def bad_parameters(request: Request, error: RequestValidationError) -> JSONResponse:
        return error_reply(422, UsageError(validation_message(error)))

    async def upload_of(request: Request, encode: bool) -> Upload:
        if service.queue.closing:
            raise RequestError(503, "the server is stopping", hint="send the request again later")
        length = request.headers.get("content-length")
        return await receive_upload(
            request.stream(),
            request.headers.get("content-type"),
            limit=service.options.max_upload_bytes,
            pcm=not encode,
            content_length=int(length) if length and length.isdigit() else None,
        )

    async def queued(request: Request, upload: Upload, job: Any) -> Any:
        try:
            if upload.size == 0:
                raise InputError(f"{upload.name}: empty file (0 bytes)")
            return await service.queue.run(job, disconnected(request))
        except ShuttingDown:
            raise RequestError(503, "the server is stopping", hint="send the request again later") from None
        finally:
            upload.discard()

    @app.get("/", include_in_schema=False)
    async def index() -> RedirectResponse:
        return RedirectResponse("/docs")

    @app.get("/health", tags=["Service"])
    async def health() -> dict[str, Any]:
        """The server's state and its queue: requests waiting, jobs running, done, failed and cancelled; the model
        and device; the peak resident memory in MB. Answers while jobs run; no API key needed."""
        return service.health()

    @app.post(
        "/asr",
        tags=["Endpoints"],
        dependencies=[Depends(check_key)],
        openapi_extra=UPLOAD_BODY,
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "the subtitle file"}, **ERRORS},
    )
    async def asr(
        request: Request,
        encode: Annotated[bool, Query(description="true: any media, decoded with ffmpeg; false: raw PCM")] = True,
        task: Annotated[Literal["transcribe", "translate"], Query(description="translate: into English")] = (
            "transcribe"
        ),
        language: Annotated[Optional[str], Query(description="ISO 639-1 code or name; empty: detected")] = None,  # noqa: UP045
        initial_prompt: Annotated[Optional[str], Query(description="names and spellings to expect")] = None,  # noqa: UP045
        vad_filter: Annotated[bool, Query(description="accepted for compatibility: the VAD always runs")] = False,
        word_timestamps: Annotated[bool, Query(description="word timing in VTT and ASS (karaoke)")] = False,
        diarize: Annotated[Optional[bool], Query(description="label speakers; default: the server's")] = None,  # noqa: UP045
        min_speakers: Annotated[Optional[int], Query(ge=1)] = None,  # noqa: UP045
        max_speakers: Annotated[Optional[int], Query(ge=1)] = None,  # noqa: UP045
        output: Annotated[str, Query(description="subtitle format", json_schema_extra={"enum": list(FORMATS)})] = (
            "txt"
        ),
        num_speakers: Annotated[Optional[int], Query(ge=1, description="the exact number of speakers")] = None,  # noqa: UP045
        speaker_names: Annotated[Optional[str], Query(description="names in order of appearance: Host,Guest")] = (  # noqa: UP045
            None
        ),
        speaker_style: Annotated[
            Literal["change", "dash", "label", "none"], Query(description="how speakers are shown")
        ] = "change",
        max_line_width: Annotated[int, Query(description="display columns per line")] = CueOptions.max_line_width,
        max_lines: Annotated[int, Query(description="lines per cue")] = CueOptions.max_lines,
        max_cps: Annotated[float, Query(description="reading speed, characters per second")] = CueOptions.max_cps,
        fps: Annotated[float, Query(description="frame rate of the video")] = CueOptions.fps,
        channels: Annotated[
            str, Query(description="auto (the centre of a surround mix), downmix, center, left, right or N")
        ] = "auto",
    ) -> Response:
        """The subtitles of ``audio_file`` in format ``output``, as a file to download (whisper-asr-webservice's
        ``/asr``), built with this project's readability rules and speaker labels."""
        output = output.strip().lower()
        changes = request_changes(
            service.template,
            output=output,
            task=task,
            language=language or None,
            initial_prompt=initial_prompt,
            word_timestamps=word_timestamps,
            diarize=diarize,
            num_speakers=num_speakers,
            min_speakers=min_speakers,
            max_speakers=max_speakers,
            speaker_names=speaker_names,
            speaker_style=speaker_style,
            max_line_width=max_line_width,
            max_lines=max_lines,
            max_cps=max_cps,
            fps=fps,
            channels=channels,
        )
        upload = await upload_of(request, encode)
        job = worker_job(upload, ("asr", str(upload.path), upload.name, changes, output))
        data = await queued(request, upload, job)
        filename = quote(f"{upload.name}.{FORMATS[output].extension}", safe="")
        return Response(
            data,
            media_type=MEDIA_TYPES.get(output, "text/plain"),
            headers={"Asr-Engine": ENGINE, "Content-Disposition": f'attachment; filename="{filename}"'},
        )

    @app.post(
        "/detect-language",
        tags=["Endpoints"],
        dependencies=[Depends(check_key)],
        openapi_extra=UPLOAD_BODY,
        responses={
            200: {
                "content": {
                    "application/json": {
                        "example": {"detected_language": "english", "language_code": "en", "confidence": 0.98}
                    }
                }
            },  # noqa: E501
            **ERRORS,
        },
    )
    async def detect_language(
        request: Request,
        encode: Annotated[bool, Query(description="true: any media, decoded with ffmpeg; false: raw PCM")] = True,
    ) -> dict[str, Any]:
        """The language spoken in ``audio_file`` (whisper-asr-webservice's ``/detect-language``): Whisper's
        detection on the 30 s from the first speech. ``detected_language`` is Whisper's lower-case name."""
        from whisper.tokenizer import LANGUAGES

        upload = await upload_of(request, encode)
        code, probability = await queued(request, upload, worker_job(upload, ("language", str(upload.path))))
        return {"detected_language": LANGUAGES.get(code, code), "language_code": code, "confidence": probability}

    from whisper_subtitler.serve.job_routes import add_job_routes

    add_job_routes(app, service, check_key)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=error)
        return JSONResponse({"detail": f"internal error: {type(error).__name__}: {error}", "hint": None}, 500)

    @app.exception_handler(Cancelled)
    async def cancelled(request: Request, error: Cancelled) -> Response:
        return Response(status_code=499)  # nginx's "client closed request": nobody reads it

    return app
