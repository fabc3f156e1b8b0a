#!/usr/bin/env bash
# The screenshots of docs/guide/report.md: heft report on the bundled go2 demo identification and
# on the panda-friction identification, drawn by headless Chromium into docs/images/.
#   bash scripts/report_screenshots.sh [build]
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
heft="$build/bin/heft"
out="$build/report-screenshots"
mkdir -p "$out" docs/images
# window heights that take in each whole page
for case in go2_payload:3000 panda_friction:4700; do
  example="${case%%:*}" height="${case##*:}"
  "$heft" identify "data/examples/${example}_identify.yaml" --out "$out/$example" --overwrite \
    --quiet > /dev/null
  "$heft" report "$out/$example" --out "$out/$example.html" --overwrite
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,"$height" \
    --screenshot="$root/docs/images/report-${example//_/-}.png" "file://$root/$out/$example.html" \
    2> /dev/null
  echo "wrote docs/images/report-${example//_/-}.png"
done
