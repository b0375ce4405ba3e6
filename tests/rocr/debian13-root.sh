#!/usr/bin/env bash
# Makes (once) a Debian 13 root with Debian 13's ROCm user space, for the rocr tests that run
# Debian 13's rocminfo, ROCr and HIP in a guest beside Debian 12's: mmdebstrap from Debian's
# archive, cached between runs (and clean clones) under the cache directory, keyed by the
# package list. Nothing in the root is installed on the system: the tests run its programs
# with its own loader and libraries, xenhsa's guest libhsakmt first.
#
# Usage: debian13-root.sh [--cache DIR] [--refresh]
#   --cache DIR  where roots live (default: ${XDG_CACHE_HOME:-~/.cache}/xenhsa)
#   --refresh    make the root again (Debian 13's point releases update ROCm's packages)
# Prints the root's path. Exits 77 (a skip to ctest) when the root cannot be made for want
# of mmdebstrap or of Debian's archive, 1 on any other error.
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/xenhsa"
refresh=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cache) cache="$2"; shift 2 ;;
        --refresh) refresh=1; shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "debian13-root.sh: unknown argument $1" >&2; exit 1 ;;
    esac
done

suite=trixie
mirror=http://deb.debian.org/debian
packages=(rocminfo libhsa-runtime64-1 libhsakmt1 libamdhip64-5)
key=$(printf '%s\n' "$suite" "$mirror" "${packages[@]}" | sha256sum | cut -c1-12)
root="$cache/debian13-rocm-$key"

if [[ $refresh -eq 0 && -f "$root/.complete" ]]; then
    echo "$root"
    exit 0
fi
if ! command -v mmdebstrap >/dev/null; then
    echo "debian13-root.sh: mmdebstrap is not installed (script/bootstrap --test installs it)" >&2
    exit 77
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/.debian13-rocm.XXXXXX")
trap 'rm -rf "$work"' EXIT
# extract: the packages and what they depend on, unpacked; no maintainer scripts run, no
# chroot needed, so that it works as a normal user too.
if ! mmdebstrap --variant=extract --mode=auto --include="$(IFS=,; echo "${packages[*]}")" \
        "$suite" "$work/root" "$mirror" >"$work/log" 2>&1; then
    tail -20 "$work/log" >&2
    if grep -qiE "could not resolve|failed to fetch|temporary failure|network is unreachable" \
            "$work/log"; then
        echo "debian13-root.sh: Debian's archive ($mirror) is out of reach" >&2
        exit 77
    fi
    echo "debian13-root.sh: mmdebstrap failed" >&2
    exit 1
fi
for f in usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 usr/bin/rocminfo \
         usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1 usr/lib/x86_64-linux-gnu/libhsakmt.so.1; do
    [[ -e "$work/root/$f" ]] || { echo "debian13-root.sh: the root lacks $f" >&2; exit 1; }
done
date -u +%F >"$work/root/.complete"
rm -rf "$root"
mv "$work/root" "$root"
echo "$root"
