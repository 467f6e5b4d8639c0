#!/bin/sh
# Installs what the SFI build needs on Debian 12 (gcc, binutils, python3, cargo
# are expected; this adds anything missing; tclsh runs SQLite's own scripts
# that generate its amalgamation for the benchmark and its output test).
# Uses sudo only when not root.
set -e
missing=""
for tool in gcc as ld nm python3 cargo tclsh; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
[ -z "$missing" ] && exit 0
echo "install-deps: missing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
pkgs="gcc binutils python3"
case "$missing" in *cargo*) pkgs="$pkgs cargo" ;; esac
case "$missing" in *tclsh*) pkgs="$pkgs tcl" ;; esac
$SUDO apt-get update -q
$SUDO apt-get install -y -q $pkgs
