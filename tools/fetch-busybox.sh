#!/usr/bin/env bash
# Fetches Debian's busybox-static package (unmodified) for the workhorse's
# root file system and extracts it:  fetch-busybox.sh DIR
# leaves DIR/busybox/bin/busybox.  Uses apt-get download (no install);
# refreshes the package lists once if the package is not known yet.
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
rm -f busybox-static_*.deb
if ! apt-get download busybox-static 2>/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    apt-get download busybox-static
fi
rm -rf busybox
dpkg-deb -x busybox-static_*.deb busybox
test -x busybox/bin/busybox
