#!/usr/bin/env bash
# Fetches the Debian packages pinned in tools/linux-packages.txt (bash,
# python3.11, their libraries), checks each .deb's SHA-256 and extracts
# them all, unmodified, into DIR/root:   fetch-linux-packages.sh DIR
# and compiles python's standard library as its installation would.
# Uses apt-get download (no install); refreshes the package lists once if
# a pinned version is not known yet.
set -euo pipefail
dir=$1
list="$(cd "$(dirname "$0")" && pwd)/linux-packages.txt"
mkdir -p "$dir/debs"
cd "$dir/debs"
pins=()
while read -r name version sum; do
    case "$name" in ''|'#'*) continue ;; esac
    pins+=("$name=$version")
    sums+=("$sum")
done < "$list"
fetch() {
    for pin in "${pins[@]}"; do
        name=${pin%%=*}
        ls "${name}"_*.deb >/dev/null 2>&1 || apt-get download "$pin" || return 1
    done
}
if ! fetch 2>/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    fetch || { echo "fetch-linux-packages: a pinned version is gone from Debian's mirror: update $list" >&2; exit 1; }
fi
rm -rf ../root.new
mkdir ../root.new
for i in "${!pins[@]}"; do
    name=${pins[$i]%%=*}
    deb=$(ls "${name}"_*.deb)
    have=$(sha256sum "$deb" | cut -d' ' -f1)
    if [ "$have" != "${sums[$i]}" ]; then
        echo "fetch-linux-packages: $deb has SHA-256 $have, not the pinned ${sums[$i]}" >&2
        rm -f "$deb"
        exit 1
    fi
    dpkg-deb -x "$deb" ../root.new
done
# What Debian's python3.11 does when installed (py3compile in its postinst):
# the standard library's byte code, made by the packaged interpreter itself
# (it runs on the Debian 12 host).  Unchecked hash-based .pyc files: the root
# file system's files keep no times, and nobody edits the standard library
# there; without them every program compiles what it imports, seconds
# under emulation.
# It runs with its own ld.so and libraries, whatever the host has.
root=$(cd ../root.new && pwd)
libs="$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu"
env -i PYTHONHOME="$root/usr" PYTHONDONTWRITEBYTECODE=1 "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \
    --library-path "$libs" "$root/usr/bin/python3.11" -m compileall -q -f -j 0 \
    --invalidation-mode unchecked-hash -s "$root" -p / "$root/usr/lib/python3.11" >/dev/null \
    || echo "fetch-linux-packages: compileall failed: python3 will compile what it imports at run time" >&2
rm -rf ../root
mv ../root.new ../root
test -x ../root/bin/bash && test -x ../root/usr/bin/python3.11
