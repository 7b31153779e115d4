"""The batched stage on real media with the embedded tiny.en model: same words as the sequential path, word
timestamps in audio time, batched alignment, simulated out-of-memory, silence and tiny chunks."""

from __future__ import annotations

import wave
from pathlib import Path

import jiwer
import numpy as np
import pytest

from tests import media
from whisper_subtitler.transcription import TranscribeOptions
from whisper_subtitler.types import SAMPLE_RATE, Audio

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# The benchmark clip's sentences (bench/long_clip.py); the first 24 are about 4 minutes of speech.
SENTENCES = tuple(
    line
    for line in (ROOT / "bench" / "long_clip_sentences.txt").read_text().splitlines()
    if line and not line.startswith("#")
)[:24]
PAUSES_S = (0.8, 2.5, 1.2, 4.0, 0.9, 6.0, 1.5)  # silences between the sentences, in turn


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == SAMPLE_RATE and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0


@pytest.fixture(scope="module")
def clean_speech(tmp_path_factory) -> tuple[Audio, str, list[float]]:
    """About 4 minutes of clear espeak-ng speech (24 sentences, pauses of 0.8 to 6 s), between 1.5 s and 1 s of
    silence; its text; the onset of each sentence in seconds."""
    folder = tmp_path_factory.mktemp("batched")
    parts = [np.zeros(int(1.5 * SAMPLE_RATE), np.float32)]
    onsets = []
    for i, text in enumerate(SENTENCES):
        onsets.append(sum(len(p) for p in parts) / SAMPLE_RATE)
        parts.append(read_wav(media.espeak(text, folder / f"s{i}.wav", voice="en-us", speed=150)))
        if i < len(SENTENCES) - 1:
            parts.append(np.zeros(int(PAUSES_S[i % len(PAUSES_S)] * SAMPLE_RATE), np.float32))
    # Trailing silence, so that both paths see the same last chunk (a region ending with the audio is cut at the
    # last mel frame by the sequential path: test_the_sequential_path_ends_on_speech_up_to_the_last_sample).
    parts.append(np.zeros(SAMPLE_RATE, np.float32))
    audio = Audio(samples=np.concatenate(parts), sample_rate=SAMPLE_RATE, source=folder / "clean.wav")
    return audio, " ".join(SENTENCES), onsets


@pytest.fixture(scope="module")
def tiny():
    import torch

    from whisper_subtitler.models import load_whisper, resolve_model

    torch.manual_seed(0)
    return load_whisper(resolve_model("tiny.en"))


@pytest.fixture(scope="module")
def speech(clean_speech):
    from whisper_subtitler.vad import speech_regions

    return speech_regions(clean_speech[0].samples)


@pytest.fixture(scope="module")
def batched(tiny, clean_speech, speech):
    from whisper_subtitler.transcription.batched import BatchedTranscriber

    return BatchedTranscriber(tiny, TranscribeOptions(), batch_size=4, model_name="tiny.en").transcribe(
        clean_speech[0], speech
    )


def wer(reference: str, hypothesis: str) -> float:
    return jiwer.wer(media.normalize(reference), media.normalize(hypothesis))


def test_batched_gives_the_same_words_as_the_sequential_path(tiny, clean_speech, speech, batched):
    from whisper_subtitler.transcription.sequential import SequentialTranscriber

    sequential = SequentialTranscriber(tiny, TranscribeOptions(), model_name="tiny.en").transcribe(
        clean_speech[0], speech
    )
    assert wer(sequential.text, batched.text) <= 0.02
    assert wer(clean_speech[1], batched.text) <= 0.08  # and both are close to what was said (tiny.en: 0.05)
    assert batched.language == "en" and batched.model == "tiny.en"


def test_word_timestamps_are_in_audio_time(clean_speech, batched):
    audio, _, onsets = clean_speech
    words = batched.words
    assert len(words) >= 350
    starts = [w.start for w in words]
    assert starts == sorted(starts)
    assert all(0.0 <= w.start <= w.end <= audio.duration for w in words)
    assert abs(words[0].start - onsets[0]) <= 0.4  # the speech starts after 1.5 s of silence
    # the first word of each sentence lies near that sentence's onset, even after the silence left out of a chunk
    for sentence, onset in zip(SENTENCES, onsets):
        first = sentence.split()[0].lower()
        candidates = [w.start for w in words if media.normalize(w.text) == first]
        assert min(abs(t - onset) for t in candidates) <= 0.4, (sentence, onset, candidates)
    # chunks follow the VAD: no segment spans one of the long pauses (2.5 s and more) between sentences
    long_pauses = [
        onsets[i + 1] - PAUSES_S[i % len(PAUSES_S)] / 2
        for i in range(len(onsets) - 1)
        if PAUSES_S[i % len(PAUSES_S)] >= 2.5
    ]
    assert not [(s.start, s.end) for s in batched.segments for t in long_pauses if s.start < t < s.end]


def test_batched_decoding_matches_whisper_decode_row_for_row(tiny, clean_speech, speech):
    """Dropping finished rows and per-row budgets must not change greedy decoding."""
    import torch
    import whisper

    from whisper_subtitler.decoding.chunking import plan_chunks, token_budget
    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.features import array_source, chunk_samples, log_mel_windows

    source = array_source(clean_speech[0].samples)
    chunks = plan_chunks(speech, max_s=8.0)[:6]  # small chunks: rows of different lengths
    assert len(chunks) == 6
    mel = log_mel_windows([chunk_samples(c, source) for c in chunks], tiny.dims.n_mels)
    with torch.no_grad():
        features = tiny.encoder(mel)
    ours = decode_features(tiny, features, [token_budget(c.duration) for c in chunks], language="en")
    reference = whisper.decode(
        tiny, features, whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False)
    )
    assert [d.text for d in ours] == [r.text for r in reference]
    assert [d.avg_logprob for d in ours] == pytest.approx([r.avg_logprob for r in reference], abs=1e-4)
    assert not any(d.truncated for d in ours)


def test_batched_alignment_gives_add_word_timestamps_words_and_times(tiny, clean_speech, speech):
    """One decoder pass over the batch's features must time words as openai-whisper's add_word_timestamps does
    (which runs the encoder again and aligns one window at a time)."""
    import torch
    from whisper.timing import add_word_timestamps
    from whisper.tokenizer import get_tokenizer

    from whisper_subtitler.decoding.alignment import align_batch
    from whisper_subtitler.decoding.chunking import plan_chunks, token_budget
    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.features import array_source, chunk_samples, log_mel_windows

    source = array_source(clean_speech[0].samples)
    chunks = plan_chunks(speech)[:4]
    pieces = [chunk_samples(c, source) for c in chunks]
    mel = log_mel_windows(pieces, tiny.dims.n_mels)
    with torch.no_grad():
        features = tiny.encoder(mel)
    decoded = decode_features(tiny, features, [token_budget(c.duration) for c in chunks], language="en")
    tokenizer = get_tokenizer(False, language="en", task="transcribe")
    ours = align_batch(
        tiny,
        tokenizer,
        [d.tokens for d in decoded],
        [d.token_probs for d in decoded],
        features,
        [len(p) for p in pieces],
    )
    for d, piece, row_mel, words in zip(decoded, pieces, mel, ours):
        segment = {"seek": 0, "start": 0.0, "end": len(piece) / SAMPLE_RATE, "tokens": list(d.tokens)}
        add_word_timestamps(
            segments=[segment],
            model=tiny,
            tokenizer=tokenizer,
            mel=row_mel,
            num_frames=len(piece) // 160,
            last_speech_timestamp=0.0,
        )
        reference = segment["words"]
        assert [w.text for w in words] == [w["word"] for w in reference]
        assert [w.start for w in words] == pytest.approx([w["start"] for w in reference], abs=0.021)
        assert [w.end for w in words] == pytest.approx([w["end"] for w in reference], abs=0.021)
        assert [w.probability for w in words] == pytest.approx([w["probability"] for w in reference], abs=1e-3)


def test_token_budget_stops_a_row_and_marks_it_truncated(tiny, clean_speech, speech):
    import torch

    from whisper_subtitler.decoding.chunking import plan_chunks
    from whisper_subtitler.decoding.decode import decode_features
    from whisper_subtitler.decoding.features import array_source, chunk_samples, log_mel_windows

    source = array_source(clean_speech[0].samples)
    chunks = plan_chunks(speech)[:2]
    with torch.no_grad():
        features = tiny.encoder(log_mel_windows([chunk_samples(c, source) for c in chunks], tiny.dims.n_mels))
    out = decode_features(tiny, features, [3, 200], language="en")
    assert out[0].truncated and len(out[0].tokens) == 3
    assert not out[1].truncated and len(out[1].tokens) > 20


def test_simulated_out_of_memory_loses_no_chunk(tiny, clean_speech, speech, batched, monkeypatch):
    from whisper_subtitler.decoding import decode
    from whisper_subtitler.decoding.chunking import plan_chunks
    from whisper_subtitler.decoding.features import array_source
    from whisper_subtitler.transcription.batched import ChunkTranscriber

    class OutOfMemoryError(RuntimeError):
        pass

    real = decode.decode_features
    sizes: list[int] = []

    def decode_at_most_one(model, features, budgets, **kw):
        sizes.append(features.shape[0])
        if features.shape[0] > 1:
            raise OutOfMemoryError("CUDA out of memory (simulated)")
        return real(model, features, budgets, **kw)

    monkeypatch.setattr(decode, "decode_features", decode_at_most_one)
    source = array_source(clean_speech[0].samples)
    chunks = plan_chunks(speech)
    assert len(chunks) >= 2
    transcriber = ChunkTranscriber(tiny, TranscribeOptions(), batch_size=4)
    transcriber.ensure_language(chunks[0], source)
    segments = transcriber.transcribe(chunks, source)
    assert sizes[0] == min(4, len(chunks))  # the first batch "ran out of memory"
    assert transcriber.batch_size == 1 and not transcriber.runner.on_cpu
    assert sizes.count(1) >= len(chunks)  # every chunk was decoded, one at a time
    assert wer(batched.text, "".join(s.text for s in segments)) <= 0.02


def test_no_speech_gives_no_segments_and_tiny_chunks_work(tiny, clean_speech):
    from whisper_subtitler.transcription.batched import BatchedTranscriber

    audio = clean_speech[0]
    silent = Audio(samples=np.zeros(5 * SAMPLE_RATE, np.float32), sample_rate=SAMPLE_RATE, source=Path("silence"))
    empty = BatchedTranscriber(tiny, TranscribeOptions(language="en")).transcribe(silent, [])
    assert empty.segments == () and empty.duration == 5.0
    # a region over silence and a 0.2 s sliver of speech: decoded without error, no invented text over silence
    out = BatchedTranscriber(tiny, TranscribeOptions()).transcribe(audio, [(0.1, 1.3), (1.6, 1.8)])
    assert len(out.words) <= 2


def test_speech_up_to_the_last_sample_is_transcribed(tiny, clean_speech, batched):
    from whisper_subtitler.transcription.batched import BatchedTranscriber
    from whisper_subtitler.vad import speech_regions

    audio = clean_speech[0]
    cut = Audio(
        samples=audio.samples[: len(audio.samples) - SAMPLE_RATE - SAMPLE_RATE // 2],
        sample_rate=SAMPLE_RATE,
        source=audio.source,
    )  # ends inside the last word
    speech = speech_regions(cut.samples)
    assert speech[-1][1] == pytest.approx(cut.duration, abs=0.05)
    out = BatchedTranscriber(tiny, TranscribeOptions(), batch_size=4).transcribe(cut, speech)
    assert len(out.words) >= len(batched.words) - 3
    assert all(w.end <= cut.duration for w in out.words)


def test_the_sequential_path_ends_on_speech_up_to_the_last_sample(tiny, clean_speech, batched):
    """openai-whisper's ``transcribe()`` decodes forever a ``clip_timestamps`` clip whose end rounds past the last
    mel frame (its seek stops moving); a VAD region that ends with the audio is such a clip when the audio's length
    is not a whole number of mel frames (160 samples). The sequential path ends its clips at the last frame."""
    import threading

    from whisper_subtitler.transcription.sequential import SequentialTranscriber
    from whisper_subtitler.vad import speech_regions

    audio = clean_speech[0]
    end = len(audio.samples) - SAMPLE_RATE - SAMPLE_RATE // 2
    end -= end % 160 - 100  # 100 samples into a mel frame: the region's end, in frames, rounds up past the last
    cut = Audio(samples=audio.samples[:end], sample_rate=SAMPLE_RATE, source=audio.source)  # inside the last word
    speech = speech_regions(cut.samples)
    assert speech[-1][1] == pytest.approx(cut.duration, abs=0.05)
    done: list = []
    worker = threading.Thread(
        target=lambda: done.append(SequentialTranscriber(tiny, TranscribeOptions()).transcribe(cut, speech)),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=600)
    assert done, "the sequential path did not end"
    assert len(done[0].words) >= len(batched.words) - 5
    assert all(w.end <= cut.duration for w in done[0].words)
