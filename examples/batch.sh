#!/usr/bin/env bash
# Subtitle every video under a folder, from cron or by hand, and report what happened.
#
#   examples/batch.sh ~/Videos [subtitles-folder]
#
# Uses whisper-subtitler's exit codes (README, "Scripting and batch runs") and its --json summary; needs jq
# for the report (apt install jq), and runs without it, with a shorter report.
set -uo pipefail

src="${1:?usage: $0 FOLDER [OUTPUT_DIR]}"
out="${2:-$src/subtitles}"
log="$out/whisper-subtitler.log"
mkdir -p "$out"

# Existing subtitles are kept (no --overwrite), so a re-run only does the new files.
whisper-subtitler transcribe "$src" --recursive --extensions mp4,mkv,mov,webm \
  --format srt,vtt --output-dir "$out" --json --quiet > "$out/summary.json" 2> "$log"
status=$?

case $status in
  0)   echo "all done" ;;
  1)   echo "some files failed:" ;;
  2)   echo "usage error, see $log" >&2; exit 2 ;;
  3)   echo "a requirement is missing (ffmpeg or a model), see $log" >&2; exit 3 ;;
  4)   echo "the GPU backend asked for is not available" >&2; exit 4 ;;
  130) echo "interrupted; finished files are complete, run again to go on" >&2; exit 130 ;;
  *)   echo "unexpected exit code $status, see $log" >&2; exit "$status" ;;
esac

if command -v jq >/dev/null; then
  jq -r '.files[] | select(.status == "failed") | "  \(.input): \(.error)"' "$out/summary.json"
  # Done, but with speech the subtitles have no words for (a clip Whisper could not hear): worth a look.
  jq -r '.files[] | select((.unheard_speech // []) | length > 0)
         | "  check \(.input): \(.unheard_speech | length) stretch(es) of speech without subtitles, the first at \(.unheard_speech[0][0]) s"' \
    "$out/summary.json"
  jq -r '"done \(.counts.done), skipped \(.counts.skipped), failed \(.counts.failed) in \(.wall_seconds) s"' \
    "$out/summary.json"
else
  grep '^failed:' "$log" | sed 's/^/  /'
fi
exit $status
