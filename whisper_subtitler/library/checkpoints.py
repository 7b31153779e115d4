"""Checkpoints of long files: what a run finished of a file before it was stopped, so that the next run goes on from
there (``transcribe --resume``; ``watch`` always) and writes the same bytes as a run that was never stopped.

A file's audio is transcribed piece by piece (``pieces.speech_pieces``: pieces of up to ``audio.PIECE_SECONDS``
cut at pauses) and each piece's chunks in batches (``transcription.chunk_transcriber``). The checkpoint holds, for
each finished piece, where it was cut (in samples) and its segments, speech regions and language; for the piece in
progress, the journal of its finished batches (``transcription.batch_log``). It is written atomically
(``outputs.write_atomic``) after every batch, so that a process killed at any moment (SIGKILL, power loss) leaves the
last one whole. The next run decodes the file's audio again from the start with ffmpeg (cheap: a 3-hour file decodes
in about a minute; seeking would not give the same samples for compressed audio), takes the finished pieces'
results without running the VAD or Whisper on them, and the finished batches of the piece in progress without
decoding them. With diarization the file is one piece: its finished batches are kept the same way, and a run
stopped during diarization transcribes nothing again and diarizes again (speakers are clustered over the whole
file). With ``--no-batch`` (openai-whisper's sequential decoding) only whole pieces are kept.

Checkpoints live in ``<state dir>/checkpoints/<key>.pickle``: the key hashes the file's absolute path, size and
mtime, the options that change the transcript (model, decoding, audio stream and channel, diarization), the device
and dtype and the package's version, so that a changed file or other options start afresh. A file's checkpoint is
removed when its outputs are written, and when the file fails (an unreadable file does not leave one behind).
Pickle is used because the floats and dataclasses must come back exactly; the files are the user's own.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whisper_subtitler.outputs import TEMP_PREFIX, write_atomic
from whisper_subtitler.transcription.batch_log import BatchJournal
from whisper_subtitler.types import Segment
from whisper_subtitler.version import __version__

log = logging.getLogger(__name__)

FOLDER = "checkpoints"


@dataclass(frozen=True)
class FinishedPiece:
    """A piece of the file transcribed: ``samples`` where it was cut (its length, in samples from its start),
    ``segments`` (seconds from the file's start), ``speech`` regions (likewise) and ``language`` (the first part's
    detected language, ``None`` when it had no speech)."""

    samples: int
    segments: tuple[Segment, ...]
    speech: tuple[tuple[float, float], ...]
    language: str | None


@dataclass
class Checkpoint:
    """What was finished of one file; ``path`` its file. ``pieces`` the finished pieces in order, ``journal`` the
    batches finished in the next piece (``BatchJournal``, saved with this checkpoint after each batch)."""

    path: Path
    pieces: list[FinishedPiece] = field(default_factory=list)
    journal: BatchJournal = field(default_factory=BatchJournal)

    def __post_init__(self) -> None:
        self.journal.save = lambda journal: self.save()

    @property
    def resumed(self) -> bool:
        """Whether anything had been finished when this checkpoint was opened."""
        return bool(self.pieces or self.journal.results)

    def piece_done(self, piece: FinishedPiece) -> None:
        """One more piece finished: kept, the journal emptied for the next one, saved."""
        self.pieces.append(piece)
        self.journal.fingerprint, self.journal.results = None, []
        self.save()

    def save(self) -> None:
        """Write the checkpoint atomically. A checkpoint that cannot be written is a warning, not a failure: the run
        goes on, it only cannot be resumed from here."""
        state = {
            "pieces": self.pieces,
            "journal": {"fingerprint": self.journal.fingerprint, "results": self.journal.results},
        }
        try:
            write_atomic(self.path, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), overwrite=True)
        except OSError as e:
            log.warning("%s: cannot write the checkpoint (%s); this file cannot be resumed", self.path, e)

    def remove(self) -> None:
        """Delete the checkpoint (the file is done, or failed)."""
        self.path.unlink(missing_ok=True)


def checkpoint_key(source: Path, fingerprint: str) -> str:
    """The name of ``source``'s checkpoint: a hash of its absolute path, size, mtime (ns), ``fingerprint`` (the run's
    options, ``Pipeline.resume_fingerprint``) and the package version; the file is ``stat``-ed (``OSError``)."""
    st = source.stat()
    text = f"{source.absolute()}\0{st.st_size}\0{st.st_mtime_ns}\0{fingerprint}\0{__version__}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def open_checkpoint(state_dir: Path, source: Path, fingerprint: str) -> Checkpoint:
    """``source``'s checkpoint under ``state_dir``: the one saved by an earlier run with the same file and options,
    else a new empty one (nothing is written until something is finished). An unreadable checkpoint is ignored with
    a warning. Raises ``OSError`` when ``source`` cannot be ``stat``-ed."""
    path = state_dir / FOLDER / f"{checkpoint_key(source, fingerprint)}.pickle"
    try:
        state: dict[str, Any] = pickle.loads(path.read_bytes())
        journal = BatchJournal(fingerprint=state["journal"]["fingerprint"], results=list(state["journal"]["results"]))
        return Checkpoint(path, list(state["pieces"]), journal)
    except FileNotFoundError:
        return Checkpoint(path)
    except Exception as e:  # noqa: BLE001 - a damaged or old checkpoint: start afresh
        log.warning("%s: checkpoint unreadable (%s); starting the file afresh", path, e)
        return Checkpoint(path)


def sweep_temporary(state_dir: Path) -> int:
    """Remove the temporary files a killed run left in ``state_dir``'s checkpoint folder; call it holding the state
    lock (``queue.StateLock``). Returns how many."""
    removed = 0
    for tmp in (state_dir / FOLDER).glob(f"{TEMP_PREFIX}*"):
        tmp.unlink(missing_ok=True)
        removed += 1
    return removed
