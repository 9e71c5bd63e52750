#!/usr/bin/env bash
# Installs the npm packages of web/ at the versions web/package-lock.json
# pins (ECharts, inlined into tierzero's HTML pages when the CLI is built;
# playwright-core, which drives Debian's Chromium in the pages' browser
# test), unless they are there already. Needs node and npm (Debian's
# nodejs and npm where they are missing).
set -euo pipefail
web="$(cd "$(dirname "${BASH_SOURCE[0]}")/../web" && pwd)"
stamp="$web/node_modules/.package-lock.json"
if [ -f "$stamp" ] && [ "$stamp" -nt "$web/package-lock.json" ] && [ -f "$web/node_modules/echarts/dist/echarts.min.js" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends nodejs npm
fi
cd "$web"
npm ci --no-audit --no-fund --loglevel=error
