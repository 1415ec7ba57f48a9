#!/usr/bin/env bash
# Records the README's quick start as a user sees it at a terminal: `script` gives the commands a
# real pseudo-terminal (so the progress bars show), and writes what reached the screen
# (quickstart.typescript) and when (quickstart.timing; replay with
# `scriptreplay -t quickstart.timing quickstart.typescript`). Run from a clone with the tool
# installed (the README's set-up line); it writes a fresh demo into a temporary folder.
# tests/unit/test_quickstart_recording.py holds the recording to what the issue promised: a bar
# per step, no Ivy or Spark log lines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/quickstart-XXXXXX)
trap 'rm -rf "$work"' EXIT
export SPARK_LOCAL_IP=127.0.0.1 COLUMNS=100 LINES=30
cd "$work"
script -q -e --timing="$here/quickstart.timing" -c \
  "shadow-backfill demo demo/ --no-run --format delta --remote sail; shadow-backfill backfill demo/backfill.yaml --start 2024-01-01 --end 2024-02-29" \
  "$here/quickstart.typescript" || true  # the quick start exits 1: three days fail, by design
# The temporary folder's name, masked with as many characters (the timing counts bytes).
sed -i "s#$work#/tmp/quickstart-XXXXXX#g" "$here/quickstart.typescript"
