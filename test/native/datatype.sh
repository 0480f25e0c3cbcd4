#!/usr/bin/env bash
# Builds and runs the C++ unit test of the datatype engine
# (native/core/datatype) twice: optimised (with the pack benchmark), and
# under AddressSanitizer + UndefinedBehaviorSanitizer. Exits non-zero on
# any compile error, test failure or sanitizer report.
#
# Usage: test/native/datatype.sh            (from anywhere)
#        CXX=clang++ test/native/datatype.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${NODEMPI_NATIVE_TEST_DIR:-$root/build/native-test}"
cxx="${CXX:-g++}"
common=(-std=c++17 -I"$root/native" -Wall -Wextra -Wno-unused-parameter -Werror)
sources=("$root"/native/core/datatype/*.cc)

# build_and_run NAME RUN_ARGS -- EXTRA_FLAGS...
build_and_run() {
  local name="$1" args="$2"
  shift 3
  local dir="$out/$name"
  mkdir -p "$dir"
  local objects=()
  for src in "${sources[@]}"; do
    local obj="$dir/datatype_$(basename "${src%.cc}").o"
    "$cxx" "${common[@]}" -O3 "$@" -c "$src" -o "$obj"
    objects+=("$obj")
  done
  "$cxx" "${common[@]}" -O2 "$@" -c "$root/test/native/datatype_test.cc" -o "$dir/datatype_test.o"
  "$cxx" "$@" "$dir/datatype_test.o" "${objects[@]}" -o "$dir/datatype_test"
  echo "== datatype_test ($name)"
  # shellcheck disable=SC2086
  "$dir/datatype_test" $args
}

build_and_run release "--bench" --
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  build_and_run sanitize "" -- -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g
echo "== datatype_test: all passed"
