#!/usr/bin/env bash
# Verifies one property of a Promela model with Spin, in a temporary directory, and exits 0
# when the verdict is the expected one (the model tests, ctest -L model).
#
# Usage: tests/model/run-spin.sh --property p1|p2|p3|p4|p5 --expect pass|fail
#            [--define MACRO]... [--spin PATH] [--cc PATH] [--keep] MODEL.pml
#   e.g. tests/model/run-spin.sh --property p3 --expect pass tests/model/xenhsa.pml
#        tests/model/run-spin.sh --property p3 --expect fail \
#            --define BROKEN_RING_BEFORE_QUEUE tests/model/xenhsa.pml
#
# The property pN is selected with -DCHECK_PN. p4 is the LTL formula p4, checked for
# acceptance cycles under weak fairness (pan -a -f; without partial-order reduction, which
# Spin does not combine with fairness over rendezvous channels); the others are assertions,
# checked with invalid end states in a safety build (-DSAFETY). pass: no error and a
# complete search (a depth or memory bound that cut the search short is a failure); fail:
# pan reports errors. --keep leaves the directory (pan.c, pan, the trail) for
# `spin -t -p -DCHECK_PN [--define ...] model.pml` there.
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

property=
expect=
spin=spin
cc=${CC:-cc}
keep=0
defines=()
model=
while [[ $# -gt 0 ]]; do
    case $1 in
    --property) property=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --define) defines+=("-D$2"); shift 2 ;;
    --spin) spin=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage ;;
    -*) echo "run-spin.sh: unknown option $1" >&2; usage ;;
    *) model=$1; shift ;;
    esac
done
[[ $property =~ ^p[1-5]$ && $expect =~ ^(pass|fail)$ && -n $model ]] || usage
model=$(realpath "$model")

# Bounds: a search deeper than this, or larger than 1 GiB, is a modelling error here.
depth=100000
memlim_mb=1024

work=$(mktemp -d "${TMPDIR:-/tmp}/xenhsa-spin.XXXXXX")
if [[ $keep -eq 0 ]]; then
    trap 'rm -rf "$work"' EXIT
fi
cd "$work"
cp "$model" model.pml

check=CHECK_${property^^}
label="$property${defines[*]:+ ${defines[*]}}"
"$spin" -a "-D$check" "${defines[@]}" model.pml >spin.log 2>&1 || {
    cat spin.log >&2
    echo "run-spin.sh: spin -a failed ($label)" >&2
    exit 1
}
if [[ $property == p4 ]]; then
    cflags=(-DNFAIR=3 -DNOREDUCE)
    run=(./pan -a -f)
else
    cflags=(-DSAFETY)
    run=(./pan)
fi
"$cc" -O2 -w "${cflags[@]}" "-DMEMLIM=$memlim_mb" -o pan pan.c
"${run[@]}" -m"$depth" >pan.log 2>&1 || true

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.log | tail -n 1)
states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log | tail -n 1)
seconds=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' pan.log | tail -n 1)
if [[ -z $errors ]]; then
    cat pan.log >&2
    echo "run-spin.sh: no verdict from pan ($label)" >&2
    exit 1
fi
# pan stops at the first error and says the search was not completed: a bound that cut a
# search short counts only where no error did.
truncated=0
if grep -q -e 'max search depth too small' -e 'reached -DMEMLIM bound' pan.log ||
    { [[ $errors -eq 0 ]] && grep -q 'Search not completed' pan.log; }; then
    truncated=1
fi
printf '%s: errors %s, states stored %s, %s s%s\n' "$label" "$errors" "${states:-?}" \
    "${seconds:-?}" "$([[ $truncated -eq 1 ]] && echo ', search truncated')"
grep -E '^pan:[0-9]*:|^pan: (assertion|acceptance|invalid)' pan.log | head -n 3 || true
if [[ $keep -eq 1 ]]; then
    echo "kept: $work"
fi

if [[ $expect == pass ]]; then
    if [[ $errors -eq 0 && $truncated -eq 0 ]]; then
        exit 0
    fi
    [[ $errors -ne 0 ]] && echo "run-spin.sh: $label violated (expected to hold)" >&2
    [[ $truncated -ne 0 ]] && echo "run-spin.sh: $label: search incomplete" >&2
    exit 1
fi
if [[ $errors -gt 0 ]]; then
    exit 0
fi
echo "run-spin.sh: $label holds (expected a violation)" >&2
exit 1
