"""An uploaded media file, streamed from the request body to a temporary file, its size checked on the way.

The body is a ``multipart/form-data`` form (RFC 7578) whose field ``audio_file`` holds the media, as
whisper-asr-webservice takes it; it is parsed as it arrives with python-multipart's streaming parser (the parser
Starlette uses), so a large upload never sits in memory and one over the limit stops at the limit. The file goes
into a new private folder (``tempfile.mkdtemp``, mode 0700) under a fixed name: the name the client gave is shown in
messages and in the reply's file name only, never used as a path. Raw PCM (``encode=false``: 16 kHz mono signed
16-bit little-endian, as Bazarr sends it) is written as a WAV file (a RIFF header before the same bytes), so that
it is read like any other media file.
"""

from __future__ import annotations

import shutil
import tempfile
import wave
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from whisper_subtitler.errors import SubtitlerError
from whisper_subtitler.types import SAMPLE_RATE

FIELD = "audio_file"  # the form field of the media (whisper-asr-webservice's name)
MULTIPART_ALLOWANCE = 64 * 1024  # bytes of a multipart body besides the file (boundaries, headers, small fields)
MB = 1024 * 1024


class RequestError(SubtitlerError):
    """A request the server refuses before any media is read: ``status`` is its HTTP status code."""

    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


@dataclass
class Upload:
    """An uploaded file: ``path`` inside its own temporary ``folder``, ``name`` as the client gave it (for
    messages), ``size`` in bytes of media received (PCM bytes for raw PCM)."""

    folder: Path
    path: Path
    name: str
    size: int = 0

    def discard(self) -> None:
        """Remove the file and its folder (again: nothing happens)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def display_name(filename: str | None) -> str:
    """The last part of a client's file name, without control characters, for messages and the reply's file name;
    ``audio_file`` when it gives none."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable()).strip()
    return name or FIELD


def too_large(limit: int) -> RequestError:
    return RequestError(
        413,
        f"{FIELD}: the upload is larger than the limit of {limit / MB:g} MB",
        hint="send a smaller file, or start the server with a larger --max-upload-mb",
    )


class _Sink:
    """Where the file's bytes go: the file itself, or, for raw PCM, a WAV file of it."""

    def __init__(self, path: Path, pcm: bool) -> None:
        self.file: BinaryIO = open(path, "xb")  # noqa: SIM115  (closed in close())
        self.wav: wave.Wave_write | None = None
        self.odd = b""  # a byte of a 16-bit sample that the next chunk completes
        if pcm:
            self.wav = wave.open(self.file, "wb")  # noqa: SIM115  (closed in close())
            self.wav.setnchannels(1)
            self.wav.setsampwidth(2)
            self.wav.setframerate(SAMPLE_RATE)

    def write(self, data: bytes) -> None:
        if self.wav is None:
            self.file.write(data)
            return
        data = self.odd + data
        whole = len(data) - len(data) % 2
        self.odd = data[whole:]
        self.wav.writeframesraw(data[:whole])

    def close(self) -> None:
        if self.wav is not None:
            self.wav.close()  # writes the sizes into the header
        self.file.close()


class _Form:
    """The parser's callbacks: the first ``audio_file`` part goes to the upload's sink, other parts are skipped."""

    def __init__(self, upload: Upload, limit: int, pcm: bool) -> None:
        self.upload, self.limit, self.pcm = upload, limit, pcm
        self.sink: _Sink | None = None
        self.headers: dict[bytes, bytes] = {}
        self.header, self.value = b"", b""
        self.in_field = False  # the current part is the file
        self.over = False  # the file passed the limit

    @property
    def found(self) -> bool:
        return self.sink is not None

    def callbacks(self) -> Any:  # python-multipart's MultipartCallbacks
        return {
            "on_part_begin": self.on_part_begin,
            "on_header_field": self.on_header_field,
            "on_header_value": self.on_header_value,
            "on_header_end": self.on_header_end,
            "on_headers_finished": self.on_headers_finished,
            "on_part_data": self.on_part_data,
            "on_part_end": self.on_part_end,
        }

    def on_part_begin(self) -> None:
        self.headers = {}

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.value += data[start:end]

    def on_header_end(self) -> None:
        self.headers[self.header.lower()] = self.value
        self.header, self.value = b"", b""

    def on_headers_finished(self) -> None:
        from python_multipart.multipart import parse_options_header

        _, disposition = parse_options_header(self.headers.get(b"content-disposition"))
        self.in_field = disposition.get(b"name") == FIELD.encode() and self.sink is None
        if self.in_field:
            self.upload.name = display_name(disposition.get(b"filename", b"").decode("utf-8", "replace"))
            self.sink = _Sink(self.upload.path, self.pcm)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if not self.in_field or self.over or self.sink is None:
            return  # other fields are read past, not kept
        if self.upload.size + end - start > self.limit:
            self.over = True
            return
        self.upload.size += end - start
        self.sink.write(data[start:end])

    def on_part_end(self) -> None:
        self.in_field = False

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()


async def receive_upload(
    body: AsyncIterator[bytes],
    content_type: str | None,
    *,
    limit: int,
    pcm: bool,
    content_length: int | None = None,
    directory: Path | None = None,
) -> Upload:
    """Stream the ``audio_file`` field of a multipart ``body`` to a temporary file; ``limit`` in bytes. The file's
    private folder is made in ``directory`` (default: the temporary directory, ``$TMPDIR``).

    Raises ``RequestError``: 413 when the file (or a declared ``content_length``) is over ``limit``, 422 when the
    body is not a multipart form or has no ``audio_file``. The temporary folder is removed on any failure; on
    success the caller removes it (``Upload.discard``)."""
    from python_multipart.exceptions import MultipartParseError
    from python_multipart.multipart import MultipartParser, parse_options_header

    kind, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    missing = RequestError(
        422,
        f"{FIELD}: no media file in the request",
        hint=f"send the media as the multipart/form-data field {FIELD} (curl -F {FIELD}=@movie.mkv)",
    )
    if kind != b"multipart/form-data" or not boundary:
        raise missing
    if content_length is not None and content_length > limit + MULTIPART_ALLOWANCE:
        raise too_large(limit)

    folder = Path(tempfile.mkdtemp(prefix="whisper-subtitler-", dir=directory))
    upload = Upload(folder, folder / ("upload.wav" if pcm else "upload"), FIELD)
    form = _Form(upload, limit, pcm)
    parser = MultipartParser(boundary, form.callbacks())
    try:
        try:
            async for chunk in body:
                parser.write(chunk)
                if form.over:
                    raise too_large(limit)
            parser.finalize()
        except MultipartParseError as e:
            raise RequestError(400, f"the request is not a valid multipart form ({e})") from None
        finally:
            form.close()
        if not form.found:
            raise missing
    except BaseException:
        upload.discard()
        raise
    return upload
