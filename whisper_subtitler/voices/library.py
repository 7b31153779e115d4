"""The voice library file: each enrolled voice's name and its clips' speaker embeddings, with the model's identity.

One JSON file, ``voices.json``, in ``$XDG_DATA_HOME/whisper-subtitler/voices/`` (``~/.local/share`` when
``XDG_DATA_HOME`` is unset; the XDG Base Directory Specification's place for user data), or in the folder
``--voices-dir`` names. ``voices export`` writes the same format to any file, ``voices import`` reads one::

    {"schema": "whisper-subtitler/voices", "version": 1,
     "model": {"name": ..., "sha256": ..., "dimension": 192, "method": ...},
     "voices": [{"name": "Alice", "clips": [{"file": "alice.wav", "start": null, "end": null,
                                              "seconds": 4.1, "embedding": "<base64>"}]}]}

``embedding`` is the clip's speaker embedding as little-endian float32 (``dimension`` values) in base64 (RFC 4648):
exact, and a third of the size of decimal text. Voices are sorted by name and the file carries no date, so the same
clips give the same bytes. ``model`` says which speaker-embedding model and which way of pooling a speaker's speech
made the embeddings (:func:`whisper_subtitler.voices.embed.identity`): embeddings of another model live in another
space and are refused, never compared. A library is written atomically (``outputs.write_atomic``): a failed command
leaves the file as it was. Pure: numpy and the standard library.

Errors: :class:`VoiceLibraryError` (exit 3) for a library file that cannot be used (unreadable, not JSON, another
schema, a newer version, another model); ``UsageError`` (exit 2) for a bad name, a name already present without
``replace``, or an unknown name.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from whisper_subtitler.errors import ExitCode, SubtitlerError, UsageError

SCHEMA = "whisper-subtitler/voices"
VERSION = 1
FILE_NAME = "voices.json"
MAX_NAME = 100  # characters
RESERVED = re.compile(r"^SPEAKER_\w*$")  # the diarization's and the batch's own labels


class VoiceLibraryError(SubtitlerError):
    """A voice library file that cannot be used: unreadable, corrupt, of another schema or a newer version, or made
    with another speaker-embedding model. Exit 3: what the command needs is not there in a usable form."""

    exit_code = ExitCode.MISSING_REQUIREMENT
    ends_batch = True


@dataclass(frozen=True)
class Clip:
    """One enrolled clip: the ``file`` name it came from (no folder: a shared library does not tell where its
    recordings lay), the ``start``/``end`` it was cut to (seconds, ``None``: the whole file), the ``seconds`` of
    speech embedded and the speaker ``embedding`` ``(dimension,)`` float32."""

    file: str
    start: float | None
    end: float | None
    seconds: float
    embedding: np.ndarray = field(compare=False)


@dataclass(frozen=True)
class Voice:
    """An enrolled speaker: ``name`` and the ``clips`` of their voice."""

    name: str
    clips: tuple[Clip, ...]

    @property
    def embedding(self) -> np.ndarray:
        """The voice's reference ``(dimension,)``: the mean of its clips' unit-normalised embeddings, weighted by
        their seconds of speech, unit-normalised."""
        vectors = np.stack([unit(c.embedding) for c in self.clips]).astype(np.float64)
        weights = np.array([max(c.seconds, 1e-3) for c in self.clips])
        return unit((vectors * weights[:, None]).sum(axis=0)).astype(np.float32)

    @property
    def seconds(self) -> float:
        """Speech enrolled, all clips together."""
        return sum(c.seconds for c in self.clips)


@dataclass(frozen=True)
class VoiceLibrary:
    """The enrolled ``voices`` (sorted by name) and the ``model`` identity their embeddings belong to."""

    model: Mapping[str, Any]
    voices: tuple[Voice, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "voices", tuple(sorted(self.voices, key=lambda v: v.name)))

    @property
    def names(self) -> tuple[str, ...]:
        """The voices' names, sorted."""
        return tuple(v.name for v in self.voices)

    def get(self, name: str) -> Voice | None:
        """The voice called ``name``, or None."""
        return next((v for v in self.voices if v.name == name), None)

    def with_voices(self, voices: Iterable[Voice], *, replace_existing: bool = False) -> VoiceLibrary:
        """A library with ``voices`` added. Raises UsageError when a name is already present and
        ``replace_existing`` is false (nothing is added then)."""
        voices = list(voices)
        present = [v.name for v in voices if self.get(v.name) is not None]
        if present and not replace_existing:
            raise UsageError(
                f"the voice library already has {', '.join(repr(n) for n in present)}",
                hint="give --replace to replace it, or another name",
            )
        new = {v.name for v in voices}
        return replace(self, voices=tuple(v for v in self.voices if v.name not in new) + tuple(voices))

    def without(self, name: str) -> VoiceLibrary:
        """A library without the voice ``name``; UsageError when there is none."""
        if self.get(name) is None:
            raise UsageError(f"the voice library has no voice {name!r}", hint="see `whisper-subtitler voices list`")
        return replace(self, voices=tuple(v for v in self.voices if v.name != name))

    def matrix(self) -> np.ndarray:
        """The voices' references, one row each in the order of :attr:`names`: ``(voices, dimension)`` float32."""
        dimension = int(self.model.get("dimension", 0))
        if not self.voices:
            return np.zeros((0, dimension), dtype=np.float32)
        return np.stack([v.embedding for v in self.voices])


def unit(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit Euclidean norm along its last axis (a zero vector stays zero)."""
    norm = np.linalg.norm(vector, axis=-1, keepdims=True)
    return vector / np.where(norm > 0, norm, 1.0)


def check_name(name: str) -> str:
    """``name`` trimmed; UsageError for an empty name, one with a comma or a line break (``--speaker-names``
    separates names with commas; subtitle lines break at line breaks), one longer than :data:`MAX_NAME`, or one
    that looks like the diarization's own labels (``SPEAKER_...``)."""
    trimmed = name.strip()
    if not trimmed:
        raise UsageError("a voice needs a name that is not empty")
    if "," in trimmed or any(c in trimmed for c in "\r\n\t"):
        raise UsageError(f"voice name {trimmed!r} has a comma or a line break", hint='give a name such as "Alice"')
    if len(trimmed) > MAX_NAME:
        raise UsageError(f"voice name {trimmed[:20]!r}... is longer than {MAX_NAME} characters")
    if RESERVED.match(trimmed):
        raise UsageError(f"voice name {trimmed!r} looks like a speaker label", hint="give a person's name")
    return trimmed


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's data folder for whisper-subtitler: ``$XDG_DATA_HOME/whisper-subtitler`` (``~/.local/share``
    when unset or not absolute, as the XDG Base Directory Specification says)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_DATA_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return root / "whisper-subtitler"


def library_path(directory: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The library file: ``directory/voices.json``, by default in ``data_dir()/voices``."""
    folder = directory if directory is not None else data_dir(environ) / "voices"
    return Path(folder).expanduser() / FILE_NAME


def to_json(library: VoiceLibrary) -> bytes:
    """The library as UTF-8 JSON bytes (module docstring), the same bytes for the same library."""
    document = {
        "schema": SCHEMA,
        "version": VERSION,
        "model": dict(library.model),
        "voices": [
            {
                "name": voice.name,
                "clips": [
                    {
                        "file": clip.file,
                        "start": clip.start,
                        "end": clip.end,
                        "seconds": round(clip.seconds, 3),
                        "embedding": base64.b64encode(np.asarray(clip.embedding, dtype="<f4").tobytes()).decode(),
                    }
                    for clip in voice.clips
                ],
            }
            for voice in library.voices
        ],
    }
    return (json.dumps(document, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def from_json(data: bytes, source: str, model: Mapping[str, Any]) -> VoiceLibrary:
    """The library in ``data`` (read from ``source``, named in errors), checked against this installation's
    ``model`` identity. Raises VoiceLibraryError for anything that is not a library of this model."""

    def broken(why: str) -> VoiceLibraryError:
        return VoiceLibraryError(
            f"{source} is not a usable voice library: {why}",
            hint="restore it from an export, or remove it and enrol the voices again",
        )

    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise broken(f"not JSON ({error})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise broken(f"no {SCHEMA!r} schema")
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION or version < 1:
        raise VoiceLibraryError(
            f"{source} is a voice library of version {version!r}; this whisper-subtitler reads version {VERSION}",
            hint="upgrade whisper-subtitler",
        )
    theirs = document.get("model")
    if not isinstance(theirs, dict):
        raise broken("no model identity")
    keys = ("name", "sha256", "method", "dimension")
    if any(theirs.get(k) != model.get(k) for k in keys):
        raise VoiceLibraryError(
            f"{source} holds embeddings of another speaker-embedding model "
            f"({theirs.get('name')}, weights {str(theirs.get('sha256'))[:12]}, {theirs.get('method')}); "
            f"this installation uses {model.get('name')}, weights {str(model.get('sha256'))[:12]}, "
            f"{model.get('method')}: they cannot be compared",
            hint="enrol the voices again with this installation (whisper-subtitler voices add)",
        )
    dimension = int(model["dimension"])
    voices = []
    try:
        for entry in document["voices"]:
            clips = []
            for c in entry["clips"]:
                vector = np.frombuffer(base64.b64decode(c["embedding"], validate=True), dtype="<f4").astype(np.float32)
                if vector.shape != (dimension,) or not np.all(np.isfinite(vector)):
                    raise ValueError(f"an embedding of {entry['name']!r} is not {dimension} finite numbers")
                start, end = c.get("start"), c.get("end")
                clips.append(
                    Clip(
                        str(c["file"]),
                        None if start is None else float(start),
                        None if end is None else float(end),
                        float(c["seconds"]),
                        vector,
                    )
                )
            if not clips:
                raise ValueError(f"voice {entry['name']!r} has no clip")
            voices.append(Voice(check_name(str(entry["name"])), tuple(clips)))
    except (KeyError, TypeError, ValueError, UsageError) as error:
        raise broken(str(error)) from None
    names = [v.name for v in voices]
    if len(set(names)) != len(names):
        raise broken("a name appears twice")
    return VoiceLibrary(dict(theirs), tuple(voices))


def read_library(path: Path, model: Mapping[str, Any], *, missing_ok: bool = True) -> VoiceLibrary:
    """The library at ``path``; an empty one of ``model`` when the file does not exist and ``missing_ok``.
    Raises VoiceLibraryError (see :func:`from_json`; also for a missing file without ``missing_ok``, or an
    unreadable one)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return VoiceLibrary(dict(model))
        raise VoiceLibraryError(f"{path}: no such voice library file") from None
    except OSError as error:
        raise VoiceLibraryError(f"{path}: cannot read the voice library ({error.strerror or error})") from None
    return from_json(data, str(path), model)


def write_library(path: Path, library: VoiceLibrary, *, overwrite: bool = True) -> None:
    """Write ``library`` to ``path`` atomically (``outputs.write_atomic``). Raises UsageError when ``path`` exists
    and ``overwrite`` is false, VoiceLibraryError when it cannot be written."""
    from whisper_subtitler.outputs import write_atomic

    try:
        write_atomic(path, to_json(library), overwrite=overwrite)
    except FileExistsError:
        raise UsageError(f"{path} exists", hint="give --overwrite to replace it") from None
    except OSError as error:
        raise VoiceLibraryError(f"{path}: cannot write the voice library ({error.strerror or error})") from None
