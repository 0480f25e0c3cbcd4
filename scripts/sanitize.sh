#!/usr/bin/env bash
# Builds the addon with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-asan/ and runs the test suite (or the vitest arguments given) against
# it. Node itself is not instrumented, so the runtimes are preloaded; leak
# checking is off because Node does not free everything at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
npx cmake-js compile -O build-asan --CDNODEMPI_SANITIZE=ON --CDCMAKE_BUILD_TYPE=Debug --log-level warn
npm run build:ts --silent
addon="$PWD/build-asan/Release/nodempi.node"
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export NODEMPI_ADDON="$addon"
exec npx vitest run "$@"
