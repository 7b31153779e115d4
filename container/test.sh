#!/usr/bin/env bash
# make container-test: build the image with podman (else docker), run it on the example video as the library it
# watches, and check the subtitles: written beside the video, by the user PUID (not root), with the words spoken;
# a second run does nothing again (the queue in /state remembers). Then `serve` in the same image: a job by path.
# Prints the build time, the image's size and the run times; exits non-zero on any failure.
#
# Settings (environment, or make variables of the same names):
#   CONTAINER             podman or docker (default: podman when installed, else docker)
#   CONTAINER_IMAGE       the tag built (whisper-subtitler:test)
#   CONTAINER_BASE        the BASE build argument (debian:bookworm-slim; container/local-base.sh makes a local one)
#   CONTAINER_STORE       podman only: keep its images and containers under this folder (--root/--runroot)
#   CONTAINER_CA          a CA bundle for pip inside the build (a proxy that re-signs TLS)
#   CONTAINER_WHEELS      a folder of local wheels; a torch wheel there is used instead of PyTorch's index
#   CONTAINER_BUILD_ARGS  more arguments for `build` (podman on a host whose runtime refuses: --isolation chroot)
#   CONTAINER_RUN_ARGS    more arguments for `run` (e.g. --runtime runc, --ulimit nofile=20000:20000)
#   CONTAINER_TEST_PORT   the port of 127.0.0.1 that the test's server is published on (19000)
# Needs: podman or docker, espeak-ng, sox, ffmpeg and curl on the host; the base image's registry, Debian's mirror
# and PyPI from inside the build.
set -euo pipefail
cd "$(dirname "$0")/.."

engine="${CONTAINER:-}"
if [ -z "$engine" ]; then
  if command -v podman >/dev/null; then engine=podman
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker
  else echo "container-test: neither podman nor a running docker found" >&2; exit 2; fi
fi
image="${CONTAINER_IMAGE:-whisper-subtitler:test}"
base="${CONTAINER_BASE:-debian:bookworm-slim}"
read -r -a build_args <<< "${CONTAINER_BUILD_ARGS:-}"
read -r -a run_args <<< "${CONTAINER_RUN_ARGS:-}"
ce=("$engine")
if [ -n "${CONTAINER_STORE:-}" ]; then
  [ "$(basename "$engine")" = podman ] || { echo "container-test: CONTAINER_STORE needs podman" >&2; exit 2; }
  ce+=(--root "$CONTAINER_STORE/root" --runroot "$CONTAINER_STORE/run")
fi

work="$(mktemp -d)"
extras=container/build-extras
cleanup() {
  "${ce[@]}" rm -f wsub-test-serve >/dev/null 2>&1 || true
  rm -rf "$work" "$extras/ca.pem" "$extras/wheels"
}
trap cleanup EXIT
if [ -n "${CONTAINER_CA:-}" ]; then cp "$CONTAINER_CA" "$extras/ca.pem"; fi
if [ -n "${CONTAINER_WHEELS:-}" ]; then mkdir -p "$extras/wheels" && cp "$CONTAINER_WHEELS"/*.whl "$extras/wheels/"; fi

echo "== engine: $("${ce[@]}" --version); base $base"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
seconds() { local d=$(( $(ms) - $1 )); printf '%d.%d' $((d / 1000)) $((d % 1000 / 100)); }  # since $1 ms, 0.1 s
start=$(ms)
"${ce[@]}" build "${build_args[@]}" --build-arg "BASE=$base" -t "$image" -f Dockerfile .
build_s=$(seconds "$start")
size=$("${ce[@]}" image inspect --format '{{.Size}}' "$image")
echo "== built $image in ${build_s} s: $((size / 1000000)) MB"

# The library: the example video; the user who owns it (not root) is the container's PUID
bash examples/make_example.sh "$work/media" >/dev/null
rm -f "$work/media/interview.txt"
mkdir -p "$work/state"
uid=$(id -u); gid=$(id -g)
if [ "$uid" = 0 ]; then uid=1000 gid=1000; chown -R "$uid:$gid" "$work/media" "$work/state"; fi
volumes=(-v "$work/media:/media" -v "$work/state:/state" -e "PUID=$uid" -e "PGID=$gid")

run_watch() {
  local t0; t0=$(ms)
  "${ce[@]}" run --rm "${run_args[@]}" "${volumes[@]}" "$image" watch /media --once --settle 0 \
    --name-template '{stem}.{lang}' >"$work/watch.out" 2>"$work/watch.err" \
    || { cat "$work/watch.err" >&2; echo "container-test: watch failed" >&2; exit 1; }
  seconds "$t0"
}
echo "== watch /media --once (the image's command, with the media-server naming)"
first_s=$(run_watch)
cat "$work/watch.err" >&2
srt="$work/media/interview.en.srt"
[ -s "$srt" ] || { ls -l "$work/media" >&2; echo "container-test: no $srt" >&2; exit 1; }
owner=$(stat -c %u "$srt")
[ "$owner" = "$uid" ] || { echo "container-test: $srt belongs to uid $owner, not $uid" >&2; exit 1; }
grep -qi "subtitles" "$srt" || { cat "$srt" >&2; echo "container-test: the words are missing" >&2; exit 1; }
echo "== $(basename "$srt"): $(grep -c -- '-->' "$srt") cues, owner uid $owner, in ${first_s} s"
head -8 "$srt"
stamp=$(stat -c %Y "$srt")
echo "== watch /media --once again: the queue in /state says it is done"
again_s=$(run_watch)
[ "$(stat -c %Y "$srt")" = "$stamp" ] || { echo "container-test: the subtitles were written again" >&2; exit 1; }
echo "== nothing done again, in ${again_s} s"

echo "== serve --library /media: a job by path"
port="${CONTAINER_TEST_PORT:-19000}"
"${ce[@]}" run -d --name wsub-test-serve "${run_args[@]}" "${volumes[@]}" -p "127.0.0.1:$port:9000" "$image" \
  serve --host 0.0.0.0 --library /media --no-diarize >/dev/null
for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 1
done
job=$(curl -fsS -H 'Content-Type: application/json' -d '{"path": "/media/interview.mp4"}' \
  "http://127.0.0.1:$port/jobs")
id=$(echo "$job" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
state=queued
for _ in $(seq 1 300); do
  state=$(curl -fsS "http://127.0.0.1:$port/jobs/$id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
  case "$state" in done|failed|cancelled) break ;; esac
  sleep 1
done
[ "$state" = done ] || { "${ce[@]}" logs wsub-test-serve >&2; echo "container-test: job $id $state" >&2; exit 1; }
curl -fsS "http://127.0.0.1:$port/jobs/$id/result?output=srt" | grep -qi subtitles
outside=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"path": "/etc/passwd"}' \
  "http://127.0.0.1:$port/jobs")
[ "$outside" = 403 ] || { echo "container-test: a path outside the library answered $outside, not 403" >&2; exit 1; }
echo "== job $id done, its SRT has the words; a path outside the library: 403"
"${ce[@]}" stop -t 30 wsub-test-serve >/dev/null

echo "container-test: passed (engine $engine, base $base, build ${build_s} s, image $((size / 1000000)) MB," \
  "first watch run ${first_s} s, second ${again_s} s)"
