#!/bin/sh
# Installs what the SFI build needs on Debian 12 (gcc, binutils, python3, cargo
# are expected; this adds anything missing).  Uses sudo only when not root.
set -e
missing=""
for tool in gcc as ld nm python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] && exit 0
echo "install-deps: missing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
pkgs="gcc binutils python3"
case "$missing" in *cargo*) pkgs="$pkgs cargo" ;; esac
$SUDO apt-get update -q
$SUDO apt-get install -y -q $pkgs
