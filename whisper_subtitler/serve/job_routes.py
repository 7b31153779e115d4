"""The endpoints of asynchronous jobs and webhooks (``async_jobs``): ``POST /jobs``, ``GET /jobs/{id}``,
``GET /jobs/{id}/result``, ``DELETE /jobs/{id}``, ``GET /jobs`` and ``POST /webhook``. docs/serve.md describes
them; errors are JSON ``{"detail", "hint"}`` as for ``/asr``.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response

from whisper_subtitler.errors import UsageError
from whisper_subtitler.library.queue import FINAL, Row, Status
from whisper_subtitler.serve.upload import RequestError, receive_upload
from whisper_subtitler.serve.webhooks import inside_library, mapped, parse_hook
from whisper_subtitler.writers import FORMATS

if TYPE_CHECKING:
    from whisper_subtitler.serve.async_jobs import AsyncJobs

MEDIA_TYPES = {"json": "application/json"}


def job_params(
    language: Annotated[Optional[str], Query(description="ISO 639-1 code or name; empty: detected")] = None,  # noqa: UP045
    task: Annotated[Literal["transcribe", "translate"], Query(description="translate: into English")] = "transcribe",
    initial_prompt: Annotated[Optional[str], Query(description="names and spellings to expect")] = None,  # noqa: UP045
    word_timestamps: Annotated[bool, Query(description="word timing in VTT and ASS (karaoke)")] = False,
    diarize: Annotated[Optional[bool], Query(description="label speakers; default: the server's")] = None,  # noqa: UP045
    num_speakers: Annotated[Optional[int], Query(ge=1)] = None,  # noqa: UP045
    min_speakers: Annotated[Optional[int], Query(ge=1)] = None,  # noqa: UP045
    max_speakers: Annotated[Optional[int], Query(ge=1)] = None,  # noqa: UP045
    speaker_names: Annotated[Optional[str], Query(description="names in order of appearance")] = None,  # noqa: UP045
) -> dict[str, Any]:
    """A job's options as query parameters, with ``/asr``'s names; only those given are kept (the row's
    ``options``), the others are the server's defaults when the job runs."""
    given = {
        "language": language or None,
        "task": task if task != "transcribe" else None,
        "initial_prompt": initial_prompt or None,
        "word_timestamps": word_timestamps or None,
        "diarize": diarize,
        "num_speakers": num_speakers,
        "min_speakers": min_speakers,
        "max_speakers": max_speakers,
        "speaker_names": speaker_names or None,
    }
    return {key: value for key, value in given.items() if value is not None}


def add_job_routes(app: FastAPI, service: Any, check_key: Any) -> None:
    """Register the job and webhook endpoints on ``app`` for ``service`` (an ``app.Service``: not imported here,
    ``app`` imports this module); ``check_key`` is the API key dependency of ``/asr``."""

    def jobs() -> AsyncJobs:
        if service.jobs is None:
            raise RequestError(
                503,
                "asynchronous jobs are off: another server runs the jobs of this state directory",
                hint="send jobs to that server, or start this one with its own --state-dir",
            )
        return service.jobs

    def job_of(job_id: int) -> Row:
        row = jobs().queue.get(job_id)  # any row of the queue: one of watch's is shown, not run, here
        if row is None:
            raise RequestError(404, f"no job {job_id}", hint="GET /jobs lists the jobs")
        return row

    def library_file(path: str) -> Any:
        return inside_library(mapped(path, service.options.path_maps), service.options.libraries)

    def accepted(row: Row, created: bool) -> JSONResponse:
        return JSONResponse(
            jobs().describe(row), status_code=201 if created else 200, headers={"Location": f"/jobs/{row.id}"}
        )

    async def webhook_key(request: Request) -> None:
        """The API key in the X-API-Key header, or in ``?api_key=`` (Sonarr and Radarr before v4 send no headers
        of their own)."""
        expected = service.options.api_key
        if expected is None:
            return
        given = request.headers.get("x-api-key") or request.query_params.get("api_key")
        if not given:
            raise RequestError(401, "the X-API-Key header (or ?api_key=) is missing", hint="send the server's key")
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise RequestError(403, "the API key does not hold the server's API key")

    @app.post("/jobs", tags=["Jobs"], status_code=201, dependencies=[Depends(check_key)])
    async def create_job(request: Request, params: Annotated[dict, Depends(job_params)]) -> JSONResponse:
        """A job for a long file: a path on the server (JSON ``{"path": "/media/film.mkv"}``, inside a ``--library``
        folder, else 403) or an upload (multipart ``audio_file``, as ``/asr``). Answers at once with the job
        (201; 200 when the same file with the same options is already a job): poll ``GET /jobs/{id}``."""
        store = jobs()
        service.template_changes(params)  # bad options: 422 before anything is queued
        kind = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        if kind == "multipart/form-data":
            if service.queue.closing:
                raise RequestError(503, "the server is stopping", hint="send the request again later")
            store.uploads.mkdir(parents=True, exist_ok=True)
            length = request.headers.get("content-length")
            upload = await receive_upload(
                request.stream(),
                request.headers.get("content-type"),
                limit=service.options.max_upload_bytes,
                pcm=False,
                content_length=int(length) if length and length.isdigit() else None,
                directory=store.uploads,
            )
            if upload.size == 0:
                upload.discard()
                raise RequestError(400, f"{upload.name}: empty file (0 bytes)")
            return accepted(store.add_upload(upload, params), True)
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("path"), str):
            raise RequestError(
                422,
                'a job needs {"path": ...} as JSON, or a multipart upload in audio_file',
                hint='curl -H "Content-Type: application/json" -d \'{"path": "/media/film.mkv"}\' .../jobs',
            )
        path = library_file(body["path"])
        before = store.queue.find(path)
        row = store.add_path(path, params, "serve", force=bool(body.get("force")))
        return accepted(row, before is None or before.updated != row.updated)

    @app.get("/jobs", tags=["Jobs"], dependencies=[Depends(check_key)])
    async def list_jobs() -> list[dict[str, Any]]:
        """Every job, oldest first (rows of ``watch`` in the same state directory are not jobs)."""
        store = jobs()
        return [store.describe(row) for row in store.queue.rows() if row.origin in ("serve", "webhook")]

    @app.get("/jobs/{job_id}", tags=["Jobs"], dependencies=[Depends(check_key)])
    async def get_job(job_id: int) -> dict[str, Any]:
        """The job's ``state`` (``queued``, ``running``, ``done``, ``failed``, ``cancelled``), ``progress`` (the
        share of the audio transcribed, 0-1), ``stage``, ``error``, and once done its ``formats``."""
        return jobs().describe(job_of(job_id))

    @app.get("/jobs/{job_id}/result", tags=["Jobs"], dependencies=[Depends(check_key)], response_class=Response)
    async def job_result(
        job_id: int,
        output: Annotated[str, Query(description="subtitle format", json_schema_extra={"enum": list(FORMATS)})] = (
            "srt"
        ),
    ) -> Response:
        """The subtitles of a done job in format ``output`` (409 while it is not done)."""
        row = job_of(job_id)
        output = output.strip().lower()
        if output not in FORMATS:
            raise UsageError(f"unknown output format {output!r}", hint=f"choose one of {', '.join(FORMATS)}")
        if row.status is not Status.DONE:
            raise RequestError(409, f"job {job_id} is {row.status}, not done", hint=f"GET /jobs/{job_id} says when")
        path = jobs().result_file(row, FORMATS[output].extension)
        if not path.is_file():
            raise UsageError(f"job {job_id} has no {output} subtitles (rttm needs speaker turns)")
        name = jobs().describe(row)["name"]
        return Response(
            path.read_bytes(),
            media_type=MEDIA_TYPES.get(output, "text/plain"),
            headers={"Content-Disposition": f'attachment; filename="{name}.{FORMATS[output].extension}"'},
        )

    @app.delete("/jobs/{job_id}", tags=["Jobs"], dependencies=[Depends(check_key)])
    async def delete_job(job_id: int) -> JSONResponse:
        """Cancel a queued job (``cancelled`` at once) or a running one (202: it stops at its next stage or batch);
        a finished job is removed with its results (then 404)."""
        store = jobs()
        row = job_of(job_id)
        if row.status in FINAL:
            store.forget(row)
            return JSONResponse({"id": job_id, "deleted": True})
        row = store.cancel(row)
        return JSONResponse(store.describe(row), status_code=202 if row.status is Status.RUNNING else 200)

    @app.post("/webhook", tags=["Jobs"], dependencies=[Depends(webhook_key)], status_code=202)
    async def webhook(request: Request) -> JSONResponse:
        """Sonarr's and Radarr's "On Import" (Webhook connection, JSON) or a plain ``{"path": ...}``: the imported
        file becomes a job whose subtitles are also written beside it (``--name-template``). A file outside the
        ``--library`` folders: 403. Other events (``Test``, ``Grab`` ...): 200, nothing queued."""
        store = jobs()
        try:
            payload = await request.json()
        except ValueError:
            raise RequestError(422, "the webhook's body is not JSON") from None
        hook = parse_hook(payload)
        paths = [library_file(path) for path in hook.paths]  # all checked before any is queued
        rows = [store.add_path(path, None, "webhook") for path in paths]
        reply = {"source": hook.source, "event": hook.event, "jobs": [store.describe(row) for row in rows]}
        return JSONResponse(reply, status_code=202 if rows else 200)
