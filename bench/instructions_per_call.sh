#!/usr/bin/env bash
# Instructions per call of one function inside one benchmark, counted by callgrind: repeatable for
# the same binary and inputs whatever else the machine is doing, where wall time on a shared VM
# moves by 10-40 % between runs. Only the calls' inclusive instructions are collected
# (--toggle-collect), divided by the number of calls the benchmark made.
#
#   bench/instructions_per_call.sh BENCH_BINARY BENCHMARK_FILTER FUNCTION
#   bench/instructions_per_call.sh build/bin/bench_dynamics \
#       'go2/heft_smoothed_contact_derivatives$' heft::dynamics::computeSmoothedContactDerivatives
#
# The benchmarks cycle through 32 states; a count over a few hundred calls is the mean over them
# to about 1 %.
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 BENCH_BINARY BENCHMARK_FILTER FUNCTION" >&2
  exit 2
fi
binary=$1 filter=$2 function=$3
command -v valgrind > /dev/null || { echo "$0: valgrind not found" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
OMP_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out" \
  --toggle-collect="${function}*" "$binary" --benchmark_filter="$filter" \
  --benchmark_min_time=1 --benchmark_repetitions=1 > /dev/null 2>&1
total=$(grep -E '^(totals|summary):' "$out" | head -1 | awk '{print $2}')
# callgrind names a function once, as "(id) name", and refers to it by id afterwards.
id=$(grep -m1 -oP "^c?fn=\(\K[0-9]+(?=\) \Q${function}\E\()" "$out" || true)
if [ -z "$id" ]; then
  echo "$0: $function was not called by benchmarks matching '$filter'" >&2
  exit 2
fi
calls=$(grep -A1 "^cfn=($id)" "$out" | grep -oP '^calls=\K[0-9]+' | awk '{n += $1} END {print n}')
echo "$filter $function: $((total / calls)) instructions per call ($calls calls)"
