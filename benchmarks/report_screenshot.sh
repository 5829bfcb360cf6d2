#!/usr/bin/env bash
# Look at report.html as a reader does, in a real browser: headless Chromium (Debian:
# `apt-get install chromium`). Network lookups are refused, so a page that needs the network
# shows it. Writes <prefix>-top.png (the first screen) and <prefix>-long.png (the first
# 12000 px).
#
#   bash benchmarks/report_screenshot.sh outputs/sweeps/<time>/report/report.html [PREFIX] [WIDTH]
set -euo pipefail
html=$(realpath "$1")
prefix=${2:-${html%.html}}
width=${3:-1440}
shot() {  # name height
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --host-resolver-rules="MAP * ~NOTFOUND" --virtual-time-budget=5000 \
    --window-size="$width,$2" --screenshot="$prefix-$1.png" "file://$html" 2>/dev/null
  echo "$prefix-$1.png"
}
shot top 1000
shot long 12000
