"""Which file a webhook names, and whether the server may touch it: Sonarr's and Radarr's "On Import" JSON, a plain
``{"path": ...}``, the library folders (``serve --library``) and path maps (``serve --path-map``).

Sonarr and Radarr (v3 and later) send a "Webhook" connection's events as JSON with ``eventType``; an import is
``"Download"`` (``isUpgrade`` true for a better copy of a file they had), a click on "Test" in their settings is
``"Test"``. The imported file is, per the *arr projects' webhook payloads (wiki.servarr.com, "Webhook"):

- Sonarr: ``episodeFile.path`` (absolute), else ``series.path`` joined with ``episodeFile.relativePath``; a season
  pack imported at once may come as ``episodeFiles`` (a list of the same objects);
- Radarr: ``movieFile.path``, else ``movie.folderPath`` joined with ``movieFile.relativePath``.

The paths are those Sonarr and Radarr see; when they run in another container the library is often mounted
elsewhere (``/tv`` there, ``/media/tv`` here): ``--path-map /tv=/media/tv`` rewrites the start of a path.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whisper_subtitler.serve.upload import RequestError

IMPORT_EVENTS = ("Download",)  # Sonarr's and Radarr's "On Import" (and "On Upgrade", the same event)


@dataclass(frozen=True)
class Hook:
    """What a webhook asks: ``source`` (``sonarr``, ``radarr``, ``plain``), ``event`` (``eventType``, ``""`` for a
    plain one), ``paths`` the files to subtitle as the sender named them (empty for an event that imports none)."""

    source: str
    event: str
    paths: tuple[str, ...]


def _joined(folder: Any, relative: Any) -> str | None:
    if isinstance(folder, str) and folder and isinstance(relative, str) and relative:
        return posixpath.join(folder, relative)
    return None


def _file_path(file: Any, folder: Any) -> str | None:
    """A Sonarr ``episodeFile`` or Radarr ``movieFile`` object's absolute path: ``path``, else ``folder`` joined with
    ``relativePath``."""
    if not isinstance(file, dict):
        return None
    path = file.get("path")
    if isinstance(path, str) and path:
        return path
    return _joined(folder, file.get("relativePath"))


def parse_hook(payload: Any) -> Hook:
    """The ``Hook`` of a webhook's JSON ``payload``. Raises ``RequestError`` (422) when it is not an object, or is
    an import that names no file; events other than an import (``Test``, ``Grab``, ``Rename`` ...) give no paths."""
    if not isinstance(payload, dict):
        raise RequestError(422, "the webhook's body is not a JSON object", hint='send {"path": "/media/file.mkv"}')
    event = payload.get("eventType")
    if event is None:
        path = payload.get("path")
        if not isinstance(path, str) or not path:
            raise RequestError(422, 'the webhook names no file: "path" is missing', hint='send {"path": "..."}')
        return Hook("plain", "", (path,))
    event = str(event)
    source = "radarr" if "movie" in payload or "movieFile" in payload else "sonarr"
    if event not in IMPORT_EVENTS:
        return Hook(source, event, ())
    paths: list[str] = []
    if source == "radarr":
        movie: dict[str, Any] = payload["movie"] if isinstance(payload.get("movie"), dict) else {}
        found = _file_path(payload.get("movieFile"), movie.get("folderPath"))
        paths += [found] if found else []
    else:
        series: dict[str, Any] = payload["series"] if isinstance(payload.get("series"), dict) else {}
        files = [payload.get("episodeFile"), *(payload.get("episodeFiles") or [])]
        for file in files:
            found = _file_path(file, series.get("path"))
            if found and found not in paths:
                paths.append(found)
    if not paths:
        what = "movieFile.path" if source == "radarr" else "episodeFile.path"
        raise RequestError(422, f"the {source} import names no file ({what} is missing)")
    return Hook(source, event, tuple(paths))


def parse_path_map(text: str) -> tuple[str, str]:
    """``FROM=TO`` of ``--path-map`` as ``(FROM, TO)``, both absolute, without a trailing ``/``. Raises
    ``ValueError`` with the reason."""
    before, sep, after = text.partition("=")
    if not sep or not before.startswith("/") or not after.startswith("/"):
        raise ValueError(f"{text!r} is not FROM=TO with two absolute paths (/tv=/media/tv)")
    return before.rstrip("/") or "/", after.rstrip("/") or "/"


def mapped(path: str, maps: Sequence[tuple[str, str]]) -> str:
    """``path`` with the first ``(FROM, TO)`` of ``maps`` whose ``FROM`` is a whole leading part of it replaced:
    ``/tv/Show/e1.mkv`` with ``("/tv", "/media/tv")`` -> ``/media/tv/Show/e1.mkv`` (not ``/tvshows/...``)."""
    for before, after in maps:
        if path == before or path.startswith(before.rstrip("/") + "/"):
            return after + path[len(before) :] if before != "/" else posixpath.join(after, path.lstrip("/"))
    return path


def inside_library(path: str, libraries: Sequence[Path]) -> Path:
    """``path`` as an absolute, resolved path (symbolic links and ``..`` followed) when it lies inside one of the
    ``libraries`` (themselves resolved). Raises ``RequestError``: 403 when no library holds it (or none is
    configured), 404 when it is not a file."""
    if not libraries:
        raise RequestError(
            403, f"{path}: the server has no library folders", hint="start the server with --library DIR"
        )
    candidate = Path(path)
    if not candidate.is_absolute():
        raise RequestError(403, f"{path}: not an absolute path", hint="send the file's absolute path on the server")
    real = candidate.resolve()
    if not any(real.is_relative_to(folder.resolve()) for folder in libraries):
        raise RequestError(
            403,
            f"{path}: outside the library folders",
            hint=f"the server subtitles files under {', '.join(map(str, libraries))} only (--library)",
        )
    if not real.is_file():
        raise RequestError(404, f"{path}: no such file")
    return real
