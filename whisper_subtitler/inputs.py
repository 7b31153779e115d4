"""Which files a run processes: paths, quoted globs, folders (``--recursive``) and ``-`` for a list on stdin.

Nothing here opens a file: a path that does not exist or cannot be read is kept, so that the pipeline reports it
with its reason and the rest of the batch goes on. ``check_input`` is that reason, found with ``stat`` alone (no
numpy, no ffmpeg), so that a batch whose inputs all fail is answered before anything is loaded (``cli.precheck``).
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from whisper_subtitler.errors import InputError

# Extensions picked up from folders with --recursive (lower case, without dot): common video and audio containers.
MEDIA_EXTENSIONS = (
    "mp4",
    "m4v",
    "mkv",
    "mov",
    "webm",
    "avi",
    "wmv",
    "flv",
    "mpg",
    "mpeg",
    "ts",
    "mts",
    "m2ts",
    "3gp",
    "ogv",
    "mp3",
    "wav",
    "flac",
    "m4a",
    "aac",
    "ogg",
    "oga",
    "opus",
    "wma",
    "aiff",
    "aif",
    "amr",
)


def parse_extensions(value: str | None) -> tuple[str, ...]:
    """``"mp4,.MKV"`` -> ``("mp4", "mkv")``; ``None`` -> ``MEDIA_EXTENSIONS``."""
    if not value:
        return MEDIA_EXTENSIONS
    return tuple(dict.fromkeys(e.strip().lower().lstrip(".") for e in value.split(",") if e.strip()))


def _walk(folder: Path, extensions: Sequence[str]) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):  # does not follow symlinked folders: no loops
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and name.rsplit(".", 1)[-1].lower() in extensions and "." in name:
                found.append(Path(root) / name)
    return found


def expand_inputs(
    arguments: Iterable[str | Path],
    *,
    recursive: bool = False,
    extensions: Sequence[str] = MEDIA_EXTENSIONS,
    stdin: TextIO | None = None,
) -> list[Path]:
    """Expand the command-line inputs into the files to process, in order, without duplicates.

    ``-`` reads one path per line from ``stdin`` (blank lines and ``#`` comments skipped). An argument with glob
    characters that names no existing file is expanded as a glob (for scripts that quote their patterns). A folder is
    walked with ``recursive``, keeping files whose extension is in ``extensions``; without it the folder is kept and
    reported as an error by the pipeline.
    """
    expanded: list[Path] = []
    for arg in arguments:
        text = str(arg)
        if text == "-" and stdin is not None:
            lines = (ln.strip() for ln in stdin.read().splitlines())
            expanded.extend(Path(ln) for ln in lines if ln and not ln.startswith("#"))
            continue
        path = Path(text)
        if not path.exists() and not path.is_symlink() and glob.has_magic(text):
            matches = sorted(glob.glob(text, recursive=recursive))
            expanded.extend(Path(m) for m in matches) if matches else expanded.append(path)
            continue
        expanded.append(path)
    result: list[Path] = []
    for path in expanded:
        if recursive and path.is_dir():
            result.extend(_walk(path, extensions))
        else:
            result.append(path)
    return list(dict.fromkeys(result))


def parse_shard(spec: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)``, the K-th of N shares of the inputs, K counted from 1 (``1/3``, ``2/3``, ``3/3``).
    Raises ``UsageError`` (exit 2) for anything else."""
    from whisper_subtitler.errors import UsageError

    k, slash, n = spec.partition("/")
    if not (slash and k.strip().isdigit() and n.strip().isdigit() and 1 <= int(k) <= int(n)):
        raise UsageError(f"--shard {spec!r} is not K/N with 1 <= K <= N (for example 2/8)")
    return int(k), int(n)


def take_shard(sources: Sequence[Path], k: int, n: int) -> list[Path]:
    """The K-th of N shares of ``sources``: sorted by path, then every N-th from the K-th, so that the N shares of one
    list cover each file exactly once, whichever machine computes them from the same list (a Slurm job array, a
    Kubernetes indexed Job). A share may be empty when there are fewer files than shares."""
    return sorted(sources, key=str)[k - 1 :: n]


def check_input(path: Path) -> Path:
    """Refuse what cannot be a media file before ffmpeg sees it; returns the absolute path.

    Raises ``InputError`` for a missing file, a dangling symlink or loop, a directory, a FIFO or device,
    an unreadable file and a zero-byte file.
    """
    try:
        st = path.stat()  # follows symlinks: a dangling link or a loop fails here
    except FileNotFoundError:
        reason = "dangling symbolic link" if path.is_symlink() else "no such file"
        raise InputError(f"{path}: {reason}") from None
    except OSError as e:  # ELOOP, EACCES on a parent, ...
        raise InputError(f"{path}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory (use --recursive to process the files in it)")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: not a regular file (FIFO, socket or device)")
    if st.st_size == 0:
        raise InputError(f"{path}: empty file (0 bytes)")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    return path.absolute()
