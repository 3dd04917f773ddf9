#!/usr/bin/env bash
# Install Debian's chromium for the browser tests when it is missing (never `playwright install`).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "chromium is missing: installing Debian's package (apt-get)" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
[ -x /usr/bin/chromium ] || { echo "chromium could not be installed" >&2; exit 1; }
