"""The Markdown page of ``make bench`` (``docs/benchmarks.md``) from its JSON results
(``bench/records/benchmarks.json``)."""

from __future__ import annotations

SPEED_TARGET = 3.0  # issue 6: at least 3x the speed of openai-whisper transcribe(word_timestamps=True), CPU
WER_MARGIN = 0.02  # issue 6: WER no worse than openai-whisper's by more than this
MEMORY_RATIO = 1.5  # issue 6: peak memory of the 3-hour file at most this times the 10-minute clip's

METHOD_NAMES = {
    "openai": "openai-whisper `transcribe(word_timestamps=True)`",
    "ours": "ours: VAD + batched decode (default)",
    "ours-int8": "ours, `--compute-type int8` (CPU, opt-in)",
    "ours-fp16": "ours, `--compute-type float16` (GPU)",
    "ours-fp32": "ours, `--compute-type float32` (GPU)",
    "faster-whisper": "faster-whisper batched, fp32",
    "faster-whisper-int8": "faster-whisper batched, int8",
}


def _f(value, fmt: str, missing: str = "-") -> str:
    return missing if value is None else format(value, fmt)


def _find(runs, **want) -> dict | None:
    for r in runs:
        if "error" not in r and all(r.get(k) == v for k, v in want.items()):
            return r
    return None


def _table(runs: list[dict]) -> list[str]:
    lines = [
        "| model | method | batch | wall s | RTF | x real time | WER | peak RSS MiB | speed vs openai | WER - openai "
        "| RSS vs openai |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        name = METHOD_NAMES.get(r["method"], r["method"])
        if "error" in r:
            lines.append(f"| {r['model']} | {name} | | failed: {r['error'].splitlines()[-1][:80]} | | | | | | | |")
            continue
        lines.append(
            f"| {r['model']} | {name} | {_f(r.get('batch_size'), 'd', '')} | {r['wall_s']:.1f} | {r['rtf']:.3f} "
            f"| {r['speed']:.1f} | {r['wer']:.3f} | {r['peak_rss_mb']:.0f} | {_f(r.get('speed_vs_openai'), '.2f')}x "
            f"| {_f(r.get('wer_minus_openai'), '+.3f')} | {_f(r.get('rss_vs_openai'), '.2f')} |"
        )
    return lines


def _targets(data: dict) -> list[str]:
    runs = [r for r in data["runs"] if r.get("group") == "main"]
    out = []
    for model in dict.fromkeys(r["model"] for r in runs):
        ours = _find(runs, clip="clip", model=model, method="ours")
        if ours and "speed_vs_openai" in ours:
            ok = ours["speed_vs_openai"] >= SPEED_TARGET and ours["wer_minus_openai"] <= WER_MARGIN
            out.append(
                f"- {model}, 10-minute clip: ours is {ours['speed_vs_openai']:.2f}x the speed of openai-whisper "
                f"(target >= {SPEED_TARGET:g}x), WER {ours['wer']:.3f} vs {ours['wer'] - ours['wer_minus_openai']:.3f} "
                f"(difference {ours['wer_minus_openai']:+.3f}, target <= +{WER_MARGIN}): "
                f"**{'met' if ok else 'not met'}**."
            )
        int8 = _find(runs, clip="clip", model=model, method="ours-int8")
        if ours and int8:
            out.append(
                f"- {model}, `--compute-type int8`: {ours['wall_s'] / int8['wall_s']:.2f}x the speed of the default, "
                f"WER {int8['wer'] - ours['wer']:+.3f} on the 10-minute clip."
            )
        # issue 15: int8 at least as fast as faster-whisper's batched int8 with a WER no worse; the default at least
        # as fast as faster-whisper's batched float32 (same weights, same clip, word timestamps on)
        for method, peer, with_wer in (("ours-int8", "faster-whisper-int8", True), ("ours", "faster-whisper", False)):
            mine = _find(runs, clip="clip", model=model, method=method)
            theirs = _find(runs, clip="clip", model=model, method=peer)
            if mine and theirs:
                ok = mine["wall_s"] <= theirs["wall_s"] and (not with_wer or mine["wer"] <= theirs["wer"])
                wer = f", WER {mine['wer']:.3f} vs {theirs['wer']:.3f}" if with_wer else ""
                out.append(
                    f"- {model}, {METHOD_NAMES[method]} vs {METHOD_NAMES[peer]}: {mine['wall_s']:.1f} s vs "
                    f"{theirs['wall_s']:.1f} s{wer} (target: at least as fast{' and no worse' if with_wer else ''}): "
                    f"**{'met' if ok else 'not met'}**."
                )
    mem = [r for r in data["runs"] if r.get("group") == "memory" and "error" not in r]
    for long in mem:
        short = _find(runs, clip="clip", model=long["model"], method=long["method"])
        if short:
            ratio = long["peak_rss_mb"] / short["peak_rss_mb"]
            out.append(
                f"- peak memory, {METHOD_NAMES.get(long['method'], long['method'])}, {long['model']}: "
                f"{long['peak_rss_mb']:.0f} MiB for the 3-hour file vs {short['peak_rss_mb']:.0f} MiB for the "
                f"10-minute clip = {ratio:.2f}x (target <= {MEMORY_RATIO}x): "
                f"**{'met' if ratio <= MEMORY_RATIO else 'not met'}**."
            )
    return out


def render_markdown(data: dict, diarization: dict | None = None) -> str:
    """The benchmark page: machine, conditions, method, one table per clip, peak memory, targets, and the speaker
    diarization figures of ``bench/diarization.py`` when given."""
    m = data["machine"]
    loads = [r[k] for r in data["runs"] if "error" not in r for k in ("load_before", "load_after")]
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `make bench` (`{data['command']}`) on {data['date']} in {data['duration_s'] / 60:.1f} min. "
        "Do not edit by hand: rerun the benchmark.",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB RAM, {m['os']}"
        + (f", GPU {m['gpu']}" if m.get("gpu") else ", no GPU"),
        f"- Software: Python {m['python']}, torch {m['torch']}, openai-whisper {m['openai_whisper']}, "
        f"faster-whisper {m['faster_whisper']} (CTranslate2 {m['ctranslate2']})",
        f"- Device {data['device']}, {data['threads']} threads per method; one method at a time, each in its own "
        "process.",
        f"- Conditions: 1-minute load average {min(loads, default=0):.1f} to {max(loads, default=0):.1f} around the "
        "measurements (other processes on the machine slow runs down; repeat runs differ by 5-8 % when idle).",
        "",
        "Method: same weights for every method (the embedded tiny.en and base CTranslate2 folders; converted exactly "
        "into openai-whisper checkpoints for openai-whisper and us, used as is by faster-whisper), greedy decoding "
        "with temperature fallback, word timestamps on, language detected. Wall time runs from the file to the "
        "transcript (audio decoding, VAD, mel, decoding, word timestamps) and excludes model loading; peak RSS "
        "includes the model. RTF = wall time / audio duration; x real time = its inverse. WER against the exact "
        "transcript, both normalized by openai-whisper's `EnglishTextNormalizer`. Ratios are to openai-whisper's "
        "`transcribe()` on the same clip and model.",
        "",
    ]
    titles = {
        "sample": "pyannote's real telephone sample",
        "clip": "10-minute clip (espeak-ng voices and the real sample, with pauses)",
    }
    main = [r for r in data["runs"] if r.get("group") == "main"]
    for key, info in data["clips"].items():
        rows = [r for r in main if r.get("clip") == key]
        if not rows:
            continue
        lines += [f"## {titles.get(key, key)}: {info['duration_s']:.0f} s, {info['reference_words']} words", ""]
        lines += _table(rows) + [""]
    mem = [r for r in data["runs"] if r.get("group") == "memory"]
    if mem:
        lines += [
            "## Peak memory: a sparse 3-hour file",
            "",
            "The 3-hour file holds the 10-minute clip's utterances spread over 3 hours of silence (pauses of 45 s to "
            "4 min). The pipeline decodes and transcribes the audio in pieces (`audio.stream_audio`), so peak memory "
            "should not grow with the duration.",
            "",
            "| model | method | wall s | x real time | WER | peak RSS MiB |",
            "|---|---|---|---|---|---|",
        ]
        for r in mem:
            if "error" in r:
                lines.append(f"| {r['model']} | {r['method']} | failed | | | |")
                continue
            lines.append(
                f"| {r['model']} | {METHOD_NAMES.get(r['method'], r['method'])} | {r['wall_s']:.1f} "
                f"| {r['speed']:.1f} | {r['wer']:.3f} | {r['peak_rss_mb']:.0f} |"
            )
        lines.append("")
    sweep = [r for r in data["runs"] if r.get("group") == "batch"]
    if sweep:
        lines += [
            "## Real-time factor by batch size (ours, 10-minute clip)",
            "",
            "| model | batch | wall s | RTF | x real time | WER | peak RSS MiB | peak VRAM MiB | speed vs openai |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sweep:
            if "error" in r:
                lines.append(f"| {r['model']} | {r.get('batch_size', '')} | failed | | | | | | |")
                continue
            vram = f"{r['peak_vram_mb']:.0f}" if "peak_vram_mb" in r else ""
            ratio = f"{r['speed_vs_openai']:.2f}x" if "speed_vs_openai" in r else ""
            lines.append(
                f"| {r['model']} | {r['batch_size']} | {r['wall_s']:.1f} | {r['rtf']:.4f} | {r['speed']:.1f} "
                f"| {r['wer']:.3f} | {r['peak_rss_mb']:.0f} | {vram} | {ratio} |"
            )
        lines.append("")
    targets = _targets(data)
    if targets:
        lines += ["## Targets of issue 6", ""] + targets + [""]
    if diarization:
        lines += _diarization(diarization)
    return "\n".join(lines)


def _diarization(d: dict) -> list[str]:
    """The speaker diarization section, from ``bench/diarization.py``'s JSON (run just before)."""
    lines = [
        "## Speaker diarization",
        "",
        f"From `bench/diarization.py` ({d['date']}, {d['duration_s'] / 60:.1f} min; JSON in "
        "`bench/records/diarization-benchmark.json`). The stage alone, from the waveform to the speaker turns, "
        "model loading "
        "excluded: `fast` is the stage `transcribe` runs (with the VAD's speech regions), `stock` pyannote's own "
        "`SpeakerDiarization` with the same two models (segmentation-3.0, CAM++), the stage before pooled "
        "embeddings.",
        "",
        "| file | audio s | stage | wall s | x real time | segmentation s | embeddings s | speakers | peak RSS MiB "
        "| load avg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d["stage"]:
        st = r["stages_s"]
        lines.append(
            f"| {r['file']} | {r['audio_s']:.0f} | {r['stage']} | {r['wall_s']:.1f} | {r['rtf']:.1f} "
            f"| {st.get('segmentation', 0):.1f} | {st.get('embeddings', 0):.1f} | {r['speakers']} "
            f"| {r['peak_rss_bytes'] / 2**20:.0f} | {r.get('load_average_1min', '')} |"
        )
    lines += [""] + [f"- {r['file']}: {r['note']}." for r in d["stage"] if r.get("note")]
    runs = d.get("whole_runs") or []
    if runs:
        lines += [
            "",
            f"Whole runs of `whisper-subtitler transcribe` on the 10-minute clip, {runs[0]['model']} model, default "
            "settings (process wall time, model loading included; stages from the `--json` summary's `timings`):",
            "",
            "| diarization | wall s | transcribe stage s | diarize stage s | speakers |",
            "|---|---|---|---|---|",
        ]
        for r in runs:
            st = r["stages_s"]
            lines.append(
                f"| {'on (default)' if r['diarize'] else '--no-diarize'} | {r['wall_s']:.1f} "
                f"| {st.get('transcribe', 0):.1f} | {st.get('diarize', 0):.1f} | {r['speakers']} |"
            )
    lines += ["", "Ratios:", ""] + [f"- {k}: {v}" for k, v in d.get("summary", {}).items()] + [""]
    return lines
