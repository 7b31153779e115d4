#!/usr/bin/env bash
# Make the example video: a short two-speaker interview spoken by espeak-ng, over an ffmpeg test pattern.
# Usage: examples/make_example.sh [OUTPUT_DIR]   (default: examples/media)
# Writes OUTPUT_DIR/interview.mp4 (H.264 + AAC) and OUTPUT_DIR/interview.txt (the script, one turn a line).
# Needs: espeak-ng, sox, ffmpeg.
set -euo pipefail
out="${1:-$(dirname "$0")/media}"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Two voices that differ enough to be told apart: another voice, variant and pitch, and a sox pitch shift.
say() {  # say SPEAKER N TEXT
  local speaker="$1" n="$2" text="$3" raw="$work/raw$2.wav"
  if [ "$speaker" = A ]; then
    espeak-ng -v en-us+m3 -p 35 -s 150 -w "$raw" "$text"
    sox -q "$raw" -r 16000 -c 1 "$work/turn$n.wav" silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse
  else
    espeak-ng -v en-gb+f4 -p 70 -s 165 -w "$raw" "$text"
    sox -q "$raw" -r 16000 -c 1 "$work/turn$n.wav" pitch 300 silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse
  fi
  sox -q -n -r 16000 -c 1 "$work/gap$n.wav" trim 0 0.8
}

lines=(
  "A|Welcome to the show. Today we talk about subtitles for video."
  "B|Thank you for having me. I have worked on subtitles for ten years."
  "A|What makes a good subtitle?"
  "B|Short lines, good timing, and text that people can read in time."
  "A|And what about speakers who talk at the same time?"
  "B|Then the subtitle shows both voices, each on its own line."
)
: > "$out/interview.txt"
parts=("$work/lead.wav")
sox -q -n -r 16000 -c 1 "$work/lead.wav" trim 0 1.0
i=0
for entry in "${lines[@]}"; do
  speaker="${entry%%|*}" text="${entry#*|}"
  say "$speaker" "$i" "$text"
  echo "$speaker: $text" >> "$out/interview.txt"
  parts+=("$work/turn$i.wav" "$work/gap$i.wav")
  i=$((i + 1))
done
sox -q "${parts[@]}" "$work/interview.wav"
duration="$(soxi -D "$work/interview.wav")"
ffmpeg -nostdin -hide_banner -loglevel error -y \
  -f lavfi -i "testsrc2=size=640x360:rate=24:duration=$duration" -i "$work/interview.wav" \
  -c:v libx264 -pix_fmt yuv420p -c:a aac -b:a 96k -shortest "$out/interview.mp4"
echo "$out/interview.mp4"
