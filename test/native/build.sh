#!/usr/bin/env bash
# Builds and runs the C++ unit test of the reduction kernels twice: once
# optimised, once under AddressSanitizer + UndefinedBehaviorSanitizer.
# Exits non-zero on any compile error, test failure or sanitizer report.
#
# The kernel sources are compiled with the addon's own flags (-O3
# -ffp-contract=off, see CMakeLists.txt), because -O3 is what vectorises them
# and the vector code is what needs testing; the test itself with -O2.
#
# Usage: test/native/build.sh            (from anywhere)
#        CXX=clang++ test/native/build.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${NODEMPI_NATIVE_TEST_DIR:-$root/build/native-test}"
mkdir -p "$out"
cxx="${CXX:-g++}"
common=(-std=c++17 -I"$root/native" -Wall -Wextra -Wno-unused-parameter -Werror -ffp-contract=off)
kernel_sources=("$root"/native/core/kernels/*.cc)

# build_and_run NAME EXTRA_FLAGS...
build_and_run() {
  local name="$1"
  shift
  local dir="$out/$name"
  mkdir -p "$dir"
  local objects=()
  for src in "${kernel_sources[@]}"; do
    local obj="$dir/$(basename "${src%.cc}").o"
    "$cxx" "${common[@]}" -O3 "$@" -c "$src" -o "$obj"
    objects+=("$obj")
  done
  "$cxx" "${common[@]}" -O2 "$@" -c "$root/test/native/kernels_test.cc" -o "$dir/kernels_test.o"
  "$cxx" "$@" "$dir/kernels_test.o" "${objects[@]}" -o "$dir/kernels_test"
  echo "== kernels_test ($name)"
  "$dir/kernels_test"
}

# The per-ISA objects must really use their instruction set, and none may
# contain fused multiply-adds (they would break bit-identity between tables).
check_codegen() {
  local dir="$out/$1"
  if ! command -v objdump >/dev/null; then
    echo "objdump not found: skipping the code generation check"
    return 0
  fi
  case "$(uname -m)" in
    x86_64)
      # Disassemble to files first: `objdump | grep -q` would trip pipefail.
      for isa in scalar avx2 avx512; do objdump -d "$dir/kernels_$isa.o" >"$dir/kernels_$isa.s"; done
      grep -q zmm "$dir/kernels_avx512.s" || { echo "kernels_avx512.o has no zmm instructions"; return 1; }
      grep -q ymm "$dir/kernels_avx2.s" || { echo "kernels_avx2.o has no ymm instructions"; return 1; }
      if grep -qE '[yz]mm' "$dir/kernels_scalar.s"; then
        echo "kernels_scalar.o uses AVX registers"; return 1
      fi
      if grep -qE '\svfn?m(add|sub)' "$dir"/kernels_*.s; then
        echo "a kernel object contains FMA instructions"; return 1
      fi
      echo "== codegen: avx512 uses zmm, avx2 uses ymm, scalar neither, no FMA anywhere"
      ;;
  esac
}

build_and_run release
check_codegen release
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  build_and_run sanitize -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
echo "== kernels_test: all passed"
