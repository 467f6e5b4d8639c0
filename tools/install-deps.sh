#!/usr/bin/env bash
# Install what the build and the tests need from Debian's packages, if missing.
#   install-deps.sh          make run / make test: QEMU, binutils, gcc
#   install-deps.sh bench    make bench: the same and matplotlib for the plots
set -euo pipefail
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-x86_64 >/dev/null || need+=(qemu-user)  # make sfi-bench counts instructions in QEMU user mode
command -v nm >/dev/null || need+=(binutils)
# The kernel, and the boot image's SFI filters (sfi/cc/sfi-cc runs gcc, GNU as and ld).
command -v gcc >/dev/null || need+=(gcc)
# The machine's TPM 2.0 (tools/qemu.py starts a swtpm for each QEMU).
command -v swtpm >/dev/null || need+=(swtpm swtpm-tools)
# The mail test's sender seals mailboxes with the `cryptography` package
# (tools/mail_sender.py; Debian's, also for a python3 of its own beside it).
python3 -c 'import cryptography' 2>/dev/null || /usr/bin/python3 -c 'import cryptography' 2>/dev/null \
    || need+=(python3-cryptography)
# The workhorse's conformance programs are linked statically (gcc -static).
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || need+=(libc6-dev)
# `make bench` builds its icount plugin (tools/icount-plugin) with the gcc
# above and no QEMU headers; the Linux guest's kernel and modules come
# from linux-image-amd64 through apt-get download (tools/linuxbench.py).
# The plots of `make bench` (tools/bench.py draws them with Debian's python3).
if [ "${1:-}" = bench ]; then
    python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null \
        || need+=(python3-matplotlib)
fi
command -v cargo >/dev/null || { echo "install-deps: cargo (Rust stable) is required" >&2; exit 1; }
if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing ${need[*]} from Debian's packages"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
fi
