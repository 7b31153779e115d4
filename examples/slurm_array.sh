#!/usr/bin/env bash
# Subtitle an archive with a Slurm job array: each task takes its own share of the files (--shard K/N), so that the
# tasks together cover every file exactly once, whatever node each one lands on.
#
#   sbatch --array=1-16 examples/slurm_array.sh /archive/videos /archive/subtitles
#
# Every node must see the input and output folders at the same paths (a shared file system) and have
# whisper-subtitler installed. The shares are computed from the sorted file list, so every task must list the same
# files: do not add files to the folder while the array runs (or give each task the same list on stdin, with -).
# A task whose share is empty (more tasks than files) exits 0. Existing subtitles are kept, so resubmitting the
# array after a failure only does the files that are missing; `sacct -j JOBID` shows each task's exit code
# (README, "Scripting and batch runs").
#
#SBATCH --job-name=subtitles
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=04:00:00
#SBATCH --output=subtitles-%A_%a.log
set -uo pipefail

src="${1:?usage: sbatch --array=1-N $0 INPUT_FOLDER OUTPUT_FOLDER}"
out="${2:?usage: sbatch --array=1-N $0 INPUT_FOLDER OUTPUT_FOLDER}"
# The task's place in the array, from 1, and the number of tasks; works for --array=0-15 as well as --array=1-16.
k=$((SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1))
n=$SLURM_ARRAY_TASK_COUNT
mkdir -p "$out/summaries"

whisper-subtitler transcribe "$src" --recursive --shard "$k/$n" --output-dir "$out" \
  --json --quiet > "$out/summaries/shard-$k-of-$n.json"
status=$?
echo "shard $k/$n ended with exit code $status"
exit $status
