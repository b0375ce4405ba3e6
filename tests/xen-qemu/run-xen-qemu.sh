#!/usr/bin/env bash
# run-xen-qemu.sh -- real-Xen test tier driver (ctest label xen-qemu).
#
# Boots Debian's Xen 4.17 hypervisor with Debian's kernel as a PV dom0 and a
# busybox initramfs under qemu-system-x86_64 (TCG), starts a PV domU with
# `xl create`, runs DOM0_TEST in dom0 and DOMU_TEST in the domU, and maps
# QEMU's isa-debug-exit status to the result (33 pass, 35 fail). With --domd-test,
# dom0 first starts a PV driver domain (domd.cfg) that runs DOMD_TEST. With --arch arm64,
# Debian's arm64 Xen, kernel, Xen tools and busybox boot under qemu-system-aarch64 (virt,
# GICv3, EL2; the domains are Arm guests, xl's type "pvh") and the test programs must be
# arm64 ones (script/xen-arm64); dom0 then reports on its console, not by an exit status.
#
# Usage: run-xen-qemu.sh --work DIR --dom0-test PATH --domu-test PATH
#                        [--dom0-args "ARGS"] [--domu-args "ARGS"]
#                        [--dom0-file SRC[:DEST]]... [--domu-file SRC[:DEST]]...
#                        [--domd-test PATH [--domd-args "ARGS"] [--domd-file SRC[:DEST]]...]
#                        [--name NAME] [--timeout SECONDS] [--arch amd64|arm64]
#   --work DIR        cache/work dir (downloaded .debs, unpacked kernel and
#                     hypervisor, base initramfs images, serial.log)
#   --dom0-test PATH  program (or shell script) run in dom0 as `PATH DOM0_ARGS`
#                     with XENHSA_PEER_DOMID=<domU domid>; its exit status decides
#   --domu-test PATH  program (or shell script) run in the domU as
#                     `PATH DOMU_ARGS`; it must exit 0 as well
#   --dom0-args/--domu-args  argument strings (default "map" / "offer")
#   --dom0-file/--domu-file SRC[:DEST]  another program or file for that
#                     domain's initramfs, at DEST (default /usr/bin/NAME), with
#                     the libraries `ldd` lists (repeatable)
#   --domd-test PATH  program run in a driver domain (created before the domU, with
#                     driver_domain=1) as `PATH DOMD_ARGS`; it must exit 0; dom0's
#                     test then also gets XENHSA_DRIVER_DOMID=<its domid>. The driver
#                     domain has no xen-privcmd: what runs there must not need it
#   --domd-args/--domd-file  as for the domU
#   --name NAME       keep this run's files apart from other tests sharing the
#                     work dir (and its download cache): WORK/run-NAME and
#                     WORK/serial-NAME.log instead of WORK/run and WORK/serial.log
#   --timeout S       hard limit for the QEMU run (default 600)
#   --arch A          amd64 (default) or arm64
#   --xen-args "ARGS" appended to Xen's command line
#
# Exit status: 0 pass, 1 fail, 77 prerequisite missing and not installable
# (ctest SKIP_RETURN_CODE; set XENHSA_XEN_QEMU_NO_SKIP=1 to turn it into 1).
# The serial console log is always kept in WORK/serial.log (serial-NAME.log)
# and printed in full on failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

work=""
dom0_test=""
domu_test=""
dom0_args="map"
domu_args="offer"
dom0_files=()
domu_files=()
domd_test=""
domd_args=""
domd_files=()
name=""
timeout_s=600
arch=amd64
xen_args=""

msg() { echo "run-xen-qemu: $*"; }
die() { echo "run-xen-qemu: ERROR: $*" >&2; exit 1; }
skip() {
    echo "run-xen-qemu: SKIP: $*" >&2
    if [[ "${XENHSA_XEN_QEMU_NO_SKIP:-0}" == 1 ]]; then
        exit 1
    fi
    exit 77
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --work) work="$2"; shift 2 ;;
        --dom0-test) dom0_test="$2"; shift 2 ;;
        --domu-test) domu_test="$2"; shift 2 ;;
        --dom0-args) dom0_args="$2"; shift 2 ;;
        --domu-args) domu_args="$2"; shift 2 ;;
        --dom0-file) dom0_files+=("$2"); shift 2 ;;
        --domu-file) domu_files+=("$2"); shift 2 ;;
        --domd-test) domd_test="$2"; shift 2 ;;
        --domd-args) domd_args="$2"; shift 2 ;;
        --domd-file) domd_files+=("$2"); shift 2 ;;
        --name) name="$2"; shift 2 ;;
        --timeout) timeout_s="$2"; shift 2 ;;
        --arch) arch="$2"; shift 2 ;;
        --xen-args) xen_args="$2"; shift 2 ;;
        -h|--help) sed -n '2,43p' "$0"; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ -n "$work" && -n "$dom0_test" && -n "$domu_test" ]] ||
    die "--work, --dom0-test and --domu-test are required (see --help)"
[[ -x "$dom0_test" ]] || die "dom0 test binary not found: $dom0_test"
[[ -x "$domu_test" ]] || die "domU test binary not found: $domu_test"
[[ -z "$domd_test" || -x "$domd_test" ]] || die "driver domain test not found: $domd_test"
[[ "$timeout_s" =~ ^[0-9]+$ ]] || die "bad --timeout: $timeout_s"
[[ -z "$name" || "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad --name: $name"
[[ "$arch" == amd64 || "$arch" == arm64 ]] || die "bad --arch: $arch"

t_start=$SECONDS
mkdir -p "$work"
work="$(cd "$work" && pwd)"
dom0_test="$(readlink -f "$dom0_test")"
domu_test="$(readlink -f "$domu_test")"
[[ -z "$domd_test" ]] || domd_test="$(readlink -f "$domd_test")"

# One run per work dir at a time.
exec 9>"$work/.lock"
flock -w 600 9 || die "could not lock $work/.lock"

# ---------------------------------------------------------------- prerequisites
XEN_BIN=/usr/lib/xen-4.17/bin
# The machine's programs and libraries. amd64: the host's own (Xen's tools installed);
# arm64: Debian's arm64 packages, unpacked (the tools) or multiarch-installed (libraries,
# script/packages-arm64.txt), their libraries listed by the arm64 loader under qemu-user.
if [[ "$arch" == arm64 ]]; then
    qemu_system=qemu-system-aarch64
    triplet=aarch64-linux-gnu
    qemu_user="$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)"
    list_libs() { "$qemu_user" "/lib/ld-linux-aarch64.so.1" --list "$1"; }
else
    qemu_system=qemu-system-x86_64
    triplet=x86_64-linux-gnu
    list_libs() { ldd "$1"; }
fi
missing_prereqs() {
    local miss=()
    local c
    for c in $qemu_system apt-get apt-cache dpkg-deb dpkg-query cpio gzip xz \
             timeout flock; do
        local p
        p="$(command -v "$c" 2>/dev/null || true)"
        [[ -n "$p" && -x "$p" ]] || miss+=("$c")
    done
    [[ -f /etc/xen/xl.conf ]] || miss+=("/etc/xen/xl.conf")
    if [[ "$arch" == arm64 ]]; then
        [[ -n "$qemu_user" ]] || miss+=("qemu-user-static")
        [[ -f /lib/ld-linux-aarch64.so.1 ]] || miss+=("libc6:arm64")
        [[ -f /lib/aarch64-linux-gnu/libxenlight.so.4.17 ]] || miss+=("libxenmisc4.17:arm64")
        echo "${miss[*]}"
        return
    fi
    command -v ldd >/dev/null || miss+=("ldd")
    [[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1 || miss+=("busybox-static")
    for c in xl xenstored xenconsoled xen-init-dom0 libxl-save-helper; do
        [[ -x "$XEN_BIN/$c" ]] || miss+=("$XEN_BIN/$c")
    done
    [[ -x /usr/bin/xenstore ]] || miss+=("/usr/bin/xenstore")
    echo "${miss[*]}"
}
missing="$(missing_prereqs)"
if [[ -n "$missing" ]]; then
    msg "missing prerequisites: $missing"
    if [[ $EUID -eq 0 && -x "$repo/script/bootstrap" ]]; then
        msg "installing them with script/bootstrap --test"
        if [[ "$arch" == arm64 ]]; then
            "$repo/script/bootstrap" --test --arch arm64 || true
        else
            "$repo/script/bootstrap" --test || true
        fi
        missing="$(missing_prereqs)"
    fi
    [[ -z "$missing" ]] || skip "missing prerequisites: $missing (run script/bootstrap --test)"
fi
libgcc_s=/lib/$triplet/libgcc_s.so.1
[[ -f "$libgcc_s" ]] || skip "libgcc_s.so.1 not found"
libgcc_s="$(readlink -f "$libgcc_s")"
# Checked after the prerequisites: a --domu-file may be one of them (/usr/bin/xenstore).
for f in ${dom0_files[@]+"${dom0_files[@]}"} ${domu_files[@]+"${domu_files[@]}"} \
         ${domd_files[@]+"${domd_files[@]}"}; do
    [[ -f "${f%%:*}" ]] || die "file not found: ${f%%:*}"
done

# ---------------------------------------------------------------- downloads
# The hypervisor and kernel are only downloaded and unpacked, never installed.
debs="$work/debs"
mkdir -p "$debs"
apt_updated=0

# Packages of the machine's architecture: "PKG:arm64" on an amd64 host.
apt_name() {
    if [[ "$arch" == "$(dpkg --print-architecture)" ]]; then echo "$1"; else echo "$1:$arch"; fi
}
# resolve_kernel_pkg -> prints the linux-image-<abi>-ARCH package that the
# linux-image-ARCH metapackage (candidate version) depends on.
resolve_kernel_pkg() {
    apt-cache depends "$(apt_name "linux-image-$arch")" 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { sub(/:.*/, "", $2); print $2; exit }'
}
candidate_version() {
    apt-cache policy "$(apt_name "$1")" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }'
}

# fetch PKG VERSION -> prints the path of the cached .deb (downloads if needed).
fetch() {
    local pkg="$1" ver="$2"
    local out="$debs/${pkg}_${ver//:/%3a}_$arch.deb"
    if [[ -s "$out" ]] && dpkg-deb --info "$out" >/dev/null 2>&1; then
        echo "$out"
        return 0
    fi
    local tmp
    tmp="$(mktemp -d "$debs/dl.XXXXXX")"
    chmod 0777 "$tmp"   # lets apt's _apt user write there (no sandbox warning)
    if ! (cd "$tmp" && apt-get download -q "$(apt_name "$pkg")=$ver" >&2); then
        if [[ $apt_updated == 0 && $EUID -eq 0 ]]; then
            apt_updated=1
            msg "apt-get download $pkg=$ver failed; running apt-get update" >&2
            apt-get update -q >&2 || true
        fi
        if ! (cd "$tmp" && apt-get download -q "$(apt_name "$pkg")=$ver" >&2); then
            rm -rf "$tmp"
            return 1
        fi
    fi
    local f
    f="$(find "$tmp" -maxdepth 1 -name '*.deb' | head -n 1)"
    [[ -n "$f" ]] || { rm -rf "$tmp"; return 1; }
    mv "$f" "$out"
    rm -rf "$tmp"
    echo "$out"
}

# newest_cached PATTERN -> newest cached .deb matching the glob, if any.
newest_cached() {
    ls -t $debs/$1 2>/dev/null | head -n 1 || true
}

# Hypervisor: the same version as the host's xen-utils-4.17 (libxl and the
# hypervisor's domctl interface must match), else the candidate.
hv_pkg=xen-hypervisor-4.17-$arch
xen_utils_ver="$(dpkg-query -W -f='${Version}' xen-utils-4.17 2>/dev/null || true)"
hv_deb=""
if [[ -n "$xen_utils_ver" ]]; then
    hv_deb="$(fetch "$hv_pkg" "$xen_utils_ver" || true)"
fi
if [[ -z "$hv_deb" ]]; then
    v="$(candidate_version "$hv_pkg")"
    if [[ -n "$v" && "$v" != "(none)" ]]; then
        msg "no $hv_pkg=$xen_utils_ver; using the candidate $v"
        hv_deb="$(fetch "$hv_pkg" "$v" || true)"
    fi
fi
[[ -n "$hv_deb" ]] || hv_deb="$(newest_cached "${hv_pkg}_*.deb")"
[[ -n "$hv_deb" ]] || skip "cannot download $hv_pkg (no apt source/network?)"

kpkg="$(resolve_kernel_pkg)"
if [[ -z "$kpkg" && $EUID -eq 0 && $apt_updated == 0 ]]; then
    apt_updated=1
    apt-get update -q || true
    kpkg="$(resolve_kernel_pkg)"
fi
k_deb=""
if [[ -n "$kpkg" ]]; then
    kver="$(candidate_version "$kpkg")"
    [[ -n "$kver" && "$kver" != "(none)" ]] && k_deb="$(fetch "$kpkg" "$kver" || true)"
fi
[[ -n "$k_deb" ]] || k_deb="$(newest_cached "linux-image-[0-9]*-${arch}_*_$arch.deb")"
[[ -n "$k_deb" ]] || skip "cannot resolve/download the kernel linux-image-$arch depends on"
kpkg="$(dpkg-deb -f "$k_deb" Package)"
kabi="${kpkg#linux-image-}"            # e.g. 6.1.0-56-amd64
# arm64: Xen's tools, xenstore's client and busybox are the arm64 packages'.
tool_debs=()
if [[ "$arch" == arm64 ]]; then
    for p in xen-utils-4.17 xenstore-utils busybox-static; do
        v="$xen_utils_ver"
        [[ "$p" == xen-utils-4.17 && -n "$v" ]] || v="$(candidate_version "$p")"
        d="$(fetch "$p" "$v" || true)"
        [[ -n "$d" ]] || skip "cannot download $p:arm64"
        tool_debs+=("$d")
    done
fi
msg "hypervisor: $(basename "$hv_deb")"
msg "kernel:     $(basename "$k_deb") (modules $kabi)"

# ---------------------------------------------------------------- unpack
# Only what is needed: the hypervisor, the bzImage and drivers/xen modules.
unpacked="$work/unpacked"
unpack_stamp="$arch $(basename "$hv_deb") $(basename "$k_deb") $(sha256sum < "$0" | cut -c1-16)"
for d in ${tool_debs[@]+"${tool_debs[@]}"}; do unpack_stamp="$unpack_stamp $(basename "$d")"; done
if [[ "$(cat "$unpacked/.stamp" 2>/dev/null || true)" != "$unpack_stamp" ]]; then
    msg "unpacking"
    rm -rf "$unpacked"
    mkdir -p "$unpacked/xen" "$unpacked/kernel" "$unpacked/tools"
    if [[ "$arch" == arm64 ]]; then
        # An arm64 Image (QEMU loads it as the kernel; Xen boots dom0 from it).
        dpkg-deb --fsys-tarfile "$hv_deb" | tar -x -C "$unpacked/xen" ./boot/xen-4.17-arm64
        mv "$unpacked/xen/boot/xen-4.17-arm64" "$unpacked/xen.elf"
        for d in "${tool_debs[@]}"; do
            dpkg-deb --fsys-tarfile "$d" | tar -x -C "$unpacked/tools"
        done
    else
        dpkg-deb --fsys-tarfile "$hv_deb" |
            tar -x -C "$unpacked/xen" --wildcards './boot/xen-4.17-amd64.gz'
        gzip -dc "$unpacked/xen/boot/xen-4.17-amd64.gz" > "$unpacked/xen.elf"
    fi
    dpkg-deb --fsys-tarfile "$k_deb" |
        tar -x -C "$unpacked/kernel" --wildcards "./boot/vmlinuz-$kabi" \
            "./lib/modules/$kabi/kernel/drivers/xen/*"
    cp "$unpacked/kernel/boot/vmlinuz-$kabi" "$unpacked/vmlinuz"
    # The domU boots faster from the plain ELF vmlinux (libxc would otherwise
    # xz-decompress the bzImage under TCG): cut out the XZ payload.
    # (An arm64 vmlinuz is the plain Image: the domU boots it, gzip'ed.)
    off="$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$unpacked/vmlinuz" | head -n 1 | cut -d: -f1 || true)"
    if [[ "$arch" == arm64 ]]; then
        gzip -1 -c "$unpacked/vmlinuz" > "$unpacked/vmlinux.gz"
    # (tail gets SIGPIPE when xz stops after the stream: ignore its status.)
    elif [[ -n "$off" ]] && { tail -c +$((off + 1)) "$unpacked/vmlinuz" || true; } |
            xz -dc --single-stream 2>/dev/null | gzip -1 > "$unpacked/vmlinux.gz" &&
            [[ -s "$unpacked/vmlinux.gz" ]]; then
        :
    else
        msg "could not extract vmlinux; the domU boots the bzImage"
        gzip -1 -c "$unpacked/vmlinuz" > "$unpacked/vmlinux.gz"
    fi
    echo "$unpack_stamp" > "$unpacked/.stamp"
fi
moddir="$unpacked/kernel/lib/modules/$kabi/kernel/drivers/xen"

# ---------------------------------------------------------------- initramfs
# copy_bin ROOT SRC DEST: SRC as ROOT/DEST plus every library `ldd` (the loader) lists.
copy_bin() {
    local root="$1" src="$2" dest="$3"
    install -D -m 0755 "$src" "$root$dest"
    [[ "$(head -c 4 "$src" | od -An -tx1 | tr -d ' ')" == 7f454c46 ]] || return 0  # not ELF
    local out
    if ! out="$(list_libs "$src" 2>&1)"; then
        # "not a dynamic executable" (static): nothing more to copy.
        grep -q "not a dynamic executable\|statically linked" <<<"$out" && return 0
        die "ldd $src failed: $out"
    fi
    if grep -q "not found" <<<"$out"; then
        die "ldd $src: missing libraries: $out"
    fi
    local lib
    for lib in $(grep -o '/[^ ]*' <<<"$out"); do
        [[ -e "$root$lib" ]] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
    done
}

add_module() {
    local root="$1" m="$2"
    local f
    f="$(find "$moddir" -name "$m.ko*" | head -n 1)"
    [[ -n "$f" ]] || die "kernel module $m not found in $moddir"
    mkdir -p "$root/lib/modules"
    case "$f" in
        *.ko) cp "$f" "$root/lib/modules/$m.ko" ;;
        *.ko.xz) xz -dc "$f" > "$root/lib/modules/$m.ko" ;;
        *.ko.zst) zstd -dc "$f" > "$root/lib/modules/$m.ko" ;;
        *.ko.gz) gzip -dc "$f" > "$root/lib/modules/$m.ko" ;;
        *) die "unknown module format: $f" ;;
    esac
}

base_root() {
    local root="$1"
    rm -rf "$root"
    mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,run,tmp,root,etc,test,lib/modules}
    local a
    if [[ "$arch" == arm64 ]]; then
        cp "$unpacked/tools/bin/busybox" "$root/bin/busybox"
        for a in $("$qemu_user" "$root/bin/busybox" --list); do
            [[ -e "$root/bin/$a" ]] || ln -s busybox "$root/bin/$a"
        done
        return
    fi
    cp /bin/busybox "$root/bin/busybox"
    for a in $(/bin/busybox --list); do
        [[ -e "$root/bin/$a" ]] || ln -s busybox "$root/bin/$a"
    done
}

# pack ROOT OUT: gzip'ed newc cpio of ROOT.
pack() {
    (cd "$1" && find . -mindepth 1 | LC_ALL=C sort |
        cpio -o -H newc -R 0:0 --quiet) | gzip -6 > "$2"
}

base_stamp="$(cat "$0" "$here/dom0-init" "$here/domu-init" "$here/domu.cfg" | sha256sum | cut -c1-16)"
# Xen's tools for dom0: the host's (amd64) or the arm64 package's, unpacked.
tools_root=""
[[ "$arch" == amd64 ]] || tools_root="$unpacked/tools"
# An Arm guest is xl's type "pvh" (Arm has no PV): guest_cfg CFG OUT.
guest_cfg() {
    if [[ "$arch" == arm64 ]]; then
        sed 's/^type = "pv"$/type = "pvh"/' "$1" > "$2"
    else
        cp "$1" "$2"
    fi
}
base_stamp="$base_stamp $unpack_stamp xen-utils=$xen_utils_ver $(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || true)"
img="$work/images"
if [[ "$(cat "$img/.stamp" 2>/dev/null || true)" != "$base_stamp" ]]; then
    msg "building the base initramfs images"
    rm -rf "$img"
    mkdir -p "$img"

    # domU: busybox, the 4 modules, /init.
    r="$img/domu-root"
    base_root "$r"
    for m in xen-privcmd xen-evtchn xen-gntdev xen-gntalloc; do add_module "$r" "$m"; done
    install -m 0755 "$here/domu-init" "$r/init"
    # Kept uncompressed: libxc gunzips a PV ramdisk itself and stops after the
    # first gzip member, so the domU initrd must be ONE gzip stream.
    (cd "$r" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) \
        > "$img/domu-base.cpio"

    # dom0: busybox, Xen userspace, modules, /init, domU kernel + config.
    r="$img/dom0-root"
    base_root "$r"
    mkdir -p "$r"/{var/lib/xen,var/log/xen,etc/xen}
    ln -s ../run "$r/var/run"
    for b in xl xenstored xenconsoled xen-init-dom0 libxl-save-helper; do
        copy_bin "$r" "$tools_root$XEN_BIN/$b" "$XEN_BIN/$b"
    done
    copy_bin "$r" "$tools_root/usr/bin/xenstore" /usr/bin/xenstore
    for a in read write ls list rm exists watch chmod; do
        ln -s xenstore "$r/usr/bin/xenstore-$a"
    done
    # dlopen'ed by glibc's pthread_cancel (xl aborts without it); ldd misses it.
    install -D -m 0644 "$libgcc_s" "$r/lib/$triplet/libgcc_s.so.1"
    cp /etc/xen/xl.conf "$r/etc/xen/xl.conf"
    for m in xen-privcmd xenfs xen-evtchn xen-gntdev xen-gntalloc; do add_module "$r" "$m"; done
    install -m 0755 "$here/dom0-init" "$r/init"
    cp "$unpacked/vmlinux.gz" "$r/root/vmlinux.gz"
    guest_cfg "$here/domu.cfg" "$r/root/domu.cfg"
    pack "$r" "$img/dom0-base.cpio.gz"
    rm -rf "$img/domu-root" "$img/dom0-root"
    echo "$base_stamp" > "$img/.stamp"
fi

# add_files ROOT SRC[:DEST]...: the --dom0-file / --domu-file entries. Debug info is
# stripped from the copies (Debug builds of the product are tens of MB; the domU's
# ramdisk must fit its memory); the symbols stay.
add_files() {
    local root="$1"
    shift
    local f src dest
    for f in "$@"; do
        src="${f%%:*}"
        dest="${f#*:}"
        [[ "$f" == *:* ]] || dest="/usr/bin/$(basename "$src")"
        # xenstore's client: the machine's (the arm64 package's on arm64).
        [[ "$src" != /usr/bin/xenstore ]] || src="$tools_root/usr/bin/xenstore"
        copy_bin "$root" "$(readlink -f "$src")" "$dest"
        if command -v strip >/dev/null; then
            strip --strip-debug "$root$dest" 2>/dev/null || true
        fi
    done
}

# Per-run layer with the test binaries, appended as a second cpio archive.
run="$work/run${name:+-$name}"
rm -rf "$run"
mkdir -p "$run"
# guest_initrd NAME TEST ARGS FILE...: RUN/NAME-initrd.gz, the domU base image (its /init
# runs /test/domu-test) with TEST, ARGS and the files, and xenstore's command names.
guest_initrd() {
    local gname="$1" gtest="$2" gargs="$3"
    shift 3
    local r="$run/$gname-test-root"
    mkdir -p "$r/test"
    copy_bin "$r" "$gtest" /test/domu-test
    add_files "$r" "$@"
    install -D -m 0644 "$libgcc_s" "$r/lib/$triplet/libgcc_s.so.1"
    if [[ -e "$r/usr/bin/xenstore" ]]; then
        local a
        for a in read write ls list rm exists watch chmod; do
            ln -s xenstore "$r/usr/bin/xenstore-$a"
        done
    fi
    echo "$gargs" > "$r/test/domu-args"
    [[ "$gname" != domd ]] || echo xen-evtchn xen-gntdev xen-gntalloc > "$r/test/modules"
    (cd "$r" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) \
        > "$run/$gname-test.cpio"
    cat "$img/domu-base.cpio" "$run/$gname-test.cpio" | gzip -6 > "$run/$gname-initrd.gz"
    rm -rf "$r" "$run/$gname-test.cpio"
}
guest_initrd domu "$domu_test" "$domu_args" ${domu_files[@]+"${domu_files[@]}"}
[[ -z "$domd_test" ]] ||
    guest_initrd domd "$domd_test" "$domd_args" ${domd_files[@]+"${domd_files[@]}"}

r="$run/dom0-test-root"
mkdir -p "$r/test" "$r/root"
copy_bin "$r" "$dom0_test" /test/dom0-test
add_files "$r" ${dom0_files[@]+"${dom0_files[@]}"}
echo "$dom0_args" > "$r/test/dom0-args"
cp "$run/domu-initrd.gz" "$r/root/domu-initrd.gz"
if [[ -n "$domd_test" ]]; then
    cp "$run/domd-initrd.gz" "$r/root/domd-initrd.gz"
    guest_cfg "$here/domd.cfg" "$r/root/domd.cfg"
fi
pack "$r" "$run/dom0-test.cpio.gz"
cat "$img/dom0-base.cpio.gz" "$run/dom0-test.cpio.gz" > "$run/dom0-initrd.gz"
rm -rf "$run/dom0-test-root"

# ---------------------------------------------------------------- boot
log="$work/serial${name:+-$name}.log"
rm -f "$log"
msg "setup took $((SECONDS - t_start))s; booting Xen under QEMU/TCG (limit ${timeout_s}s)"
msg "serial log: $log"

# Multiboot modules are comma-separated; the first word of each is dropped.
# gnttab_max_maptrack_frames: not Xen's default, so that the doctor shows it reads it.
xen_cmdline="console=com1 com1=115200,8n1 loglvl=all guest_loglvl=all dom0_mem=1024M dom0_max_vcpus=2 gnttab_max_maptrack_frames=2048"
dom0_cmdline="console=hvc0 earlyprintk=xen nomodeset panic=5"

qpid=""
cleanup() {
    if [[ -n "$qpid" ]] && kill -0 "$qpid" 2>/dev/null; then
        kill -TERM "$qpid" 2>/dev/null || true
        sleep 1
        kill -KILL "$qpid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM HUP

if [[ "$arch" == arm64 ]]; then
    # virt with GICv3 and EL2; QEMU's guest-loader devices put dom0's kernel and initrd in
    # the device tree as Xen's multiboot modules.
    xen_cmdline="console=dtuart dtuart=/pl011@9000000 loglvl=all guest_loglvl=all dom0_mem=1024M dom0_max_vcpus=2 gnttab_max_maptrack_frames=2048"
    xen_cmdline="$xen_cmdline${xen_args:+ $xen_args}"
    dom0_cmdline="console=hvc0 earlycon=xenboot rdinit=/init panic=5"
    machine=(qemu-system-aarch64 -machine virt,gic-version=3,virtualization=on,accel=tcg
             -cpu cortex-a57 -m 3G -smp 2
             -kernel "$unpacked/xen.elf" -append "$xen_cmdline"
             -device "guest-loader,addr=0x49000000,kernel=$unpacked/vmlinuz,bootargs=$dom0_cmdline"
             -device "guest-loader,addr=0x50000000,initrd=$run/dom0-initrd.gz")
else
    xen_cmdline="$xen_cmdline${xen_args:+ $xen_args}"
    machine=(qemu-system-x86_64 -machine q35,accel=tcg -cpu qemu64,+svm -m 3G -smp 2
             -device isa-debug-exit,iobase=0xf4,iosize=0x04
             -kernel "$unpacked/xen.elf" -append "$xen_cmdline"
             -initrd "$unpacked/vmlinuz $dom0_cmdline,$run/dom0-initrd.gz")
fi

t_boot=$SECONDS
set +e
# --foreground keeps QEMU in our process group, so killing the group (ctest
# timeout, CI job cancel) also kills QEMU; the EXIT/TERM traps cover the rest.
timeout --foreground -k 10 "$timeout_s" "${machine[@]}" \
    -display none -monitor none -serial "file:$log" -no-reboot \
    </dev/null &
qpid=$!
wait "$qpid"
rc=$?
set -e
qpid=""
elapsed=$((SECONDS - t_boot))
# Arm's virt machine has no isa-debug-exit: dom0 powers off after saying its result.
if [[ "$arch" == arm64 && $rc == 0 ]]; then
    if grep -aq 'XENHSA-INIT: .*RESULT PASS' "$log"; then
        rc=33
    elif grep -aq 'XENHSA-INIT: .*RESULT FAIL' "$log"; then
        rc=35
    fi
fi

# On a pass: the init script's steps and the tests' verdicts: gtest results, and the
# "check NAME ok|FAIL" / "summary ..." lines of xenhsa-guest and backend-guest.dom0 (the
# full exchange between dom0 and the domU, "XENHSA-DOM0: > cmd" / "domU| XENHSA-PEER:
# cmd -> reply", stays in the serial log).
summary() {
    grep -aE 'XENHSA-(INIT|DOMU-EXIT)|^\[ *(OK|PASSED|FAILED|SKIPPED) *\]|^((domU|domd)\| )?(check|summary) ' \
        "$log" || true
    grep -aqE "XENHSA-PEER: " "$log" || return 0
    msg "some of the domU's grant and event commands (all in the serial log):"
    local c
    for c in share map probe-write notify wait-event; do
        grep -aE "XENHSA-PEER: $c " "$log" | head -n 2 || true
    done
}
case $rc in
    33)
        msg "QEMU exit status 33 (PASS) after ${elapsed}s; total $((SECONDS - t_start))s"
        summary
        exit 0
        ;;
    35) why="QEMU exit status 35 (test FAIL reported by dom0)" ;;
    124|137) why="timeout: QEMU killed after ${timeout_s}s (status $rc)" ;;
    *) why="QEMU exit status $rc (no result reported by dom0)" ;;
esac
msg "FAIL: $why after ${elapsed}s"
msg "---------------- serial log ($log) ----------------"
cat "$log" 2>/dev/null || true
msg "---------------- end of serial log ----------------"
msg "FAIL: $why"
exit 1
