"""The language screen's quiet slices (``language_id.sliced_probabilities`` with ``quiet_spans``): a region's frames
of its window followed by one second of encoded silence, on real English telephone speech with Whisper base."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def english_window(tmp_path_factory):
    """Whisper base, the first 30-s window of a real English conversation (pyannote's sample re-arranged) encoded,
    and its speech regions (seconds), as the language plan cuts them."""
    import whisper

    from tests import media_multilingual as mm
    from tests.media_conversation import rearranged_conversation
    from whisper_subtitler.decoding.language_plan import language_units
    from whisper_subtitler.models import load_whisper, resolve_model

    made = rearranged_conversation(tmp_path_factory.mktemp("screen") / "conversation.wav", seed=6, gaps=(0.1, 0.5))
    samples = mm.read_wav(made.wav)[: 30 * mm.SAMPLE_RATE]
    regions = [(a, b) for a, b in language_units(samples) if b <= 29.5]
    model = load_whisper(resolve_model("base"), device="cpu")
    mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(samples)), model.dims.n_mels)
    with torch.no_grad():
        features = model.encoder(mel[None])[0]
    return model, features, regions


@pytest.mark.slow
def test_a_quiet_slice_is_the_detection_of_the_region_frames_followed_by_silence(english_window):
    from whisper_subtitler.decoding import language_id

    model, features, regions = english_window
    assert len(regions) >= 6
    with torch.no_grad():
        silence = language_id.silence_keys_values(model)
        rows = language_id.sliced_probabilities(model, features, regions, quiet_spans=regions, silence=silence)
        plain, quiet = rows[: len(regions)], rows[len(regions) :]
        alone = language_id.sliced_probabilities(model, features, regions)  # the quiet rows change no other row
        assert [p["en"] for p in plain] == pytest.approx([p["en"] for p in alone], abs=1e-4)
        # The same softmax as the decoder attending to the slice's frames and the silence's encoder output, joined.
        encoded_silence = language_id.encode_regions(model, [np.zeros(16_000, np.float32)])[0]
        for (start, end), row in zip(regions, quiet):
            a = int(start / language_id.FRAME_S) - language_id.MARGIN_FRAMES
            b = int(round(end / language_id.FRAME_S)) + language_id.MARGIN_FRAMES
            joined = torch.cat([features[max(0, a) : b], encoded_silence])[None]
            (expected,) = language_id.features_probabilities(model, joined)
            assert row["en"] == pytest.approx(expected["en"], abs=1e-4)
            assert max(row, key=row.__getitem__) == max(expected, key=expected.__getitem__)
    # Why the screen uses them: sliced without the silence, English answers are heard as other languages.
    heard = [max(p, key=p.__getitem__) for p in quiet]
    assert heard.count("en") >= len(regions) - 1
    assert sum(max(p, key=p.__getitem__) == "en" for p in plain) < heard.count("en")
    with pytest.raises(ValueError):
        language_id.sliced_probabilities(model, features, regions, quiet_spans=regions)


@pytest.mark.slow
def test_an_english_conversation_sends_hardly_a_region_to_be_encoded_alone(tmp_path, caplog):
    from tests.media_conversation import long_conversation
    from whisper_subtitler.api import Subtitler

    made = long_conversation(tmp_path / "conversation.wav", 120.0, first_seed=8000)
    with caplog.at_level(logging.INFO, logger="whisper_subtitler.decoding.language_plan"):
        result = Subtitler("base", diarize=False, device="cpu").run(made.wav)
    (plan,) = [r for r in caplog.records if r.getMessage().startswith("language per speech region")]
    regions, alone = plan.args[0], plan.args[1]
    assert regions >= 50 and alone <= 2, plan.getMessage()  # 14 of 60 before the quiet slices
    assert {s.language for s in result.segments} == {"en"}
