#!/usr/bin/env bash
# npm run test:asan [-- vitest arguments]: the native code under
# AddressSanitizer and UndefinedBehaviorSanitizer, with zero reports.
#
#  1. One cmake-js build into build-asan/: the addon and the C++ tests
#     (CMakeLists.txt, NODEMPI_SANITIZE=ON NODEMPI_TESTS=ON).
#  2. The C++ tests through CTest, in their long form (NODEMPI_TEST_LONG=1).
#  3. The vitest suite (or the files and options given) against that addon,
#     without test/native (step 2 ran it) and test/process/npm-pack-install.test.ts
#     (it compiles and installs an unsanitized prebuild, which under the
#     preloaded runtimes overruns its 150 s limit). NODEMPI_ADDON points every
#     process at the sanitized addon and the launcher passes the
#     environment on, so every rank loads it; Node itself is not
#     instrumented, so the runtimes are preloaded (with
#     scripts/ubsan-log-path.c, so UBSan's reports reach files too). Leak checking is off
#     under Node (V8 does not free everything at exit), on in step 2.
#  4. Every report, from any process (ranks, launchers, test workers,
#     tools), is written under build-asan/reports/: a report fails the test
#     that started the process (test/helpers/sanitizer-reports.ts), and any
#     report at all fails this script, which prints them.
set -uo pipefail
cd "$(dirname "$0")/.."
export npm_config_nodedir="${npm_config_nodedir:-/usr}"
start=$SECONDS

echo "== build: addon and C++ tests with -fsanitize=address,undefined (build-asan/)"
npx cmake-js compile -O build-asan --CDNODEMPI_SANITIZE=ON --CDNODEMPI_TESTS=ON --log-level warn || exit 1
npm run build:ts --silent || exit 1
# See the file: without it UBSan reports would go to stderr only.
gcc -shared -fPIC -O2 scripts/ubsan-log-path.c -o build-asan/ubsan-log-path.so -ldl || exit 1

echo "== C++ tests (long form)"
NODEMPI_TEST_LONG=1 ctest --test-dir build-asan --output-on-failure
ctest_status=$?

echo "== vitest against build-asan/Release/nodempi.node"
logs="$PWD/build-asan/reports"
rm -rf "$logs"
mkdir -p "$logs"
vitest_status=0
(
  export NODEMPI_ADDON="$PWD/build-asan/Release/nodempi.node"
  export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so) $PWD/build-asan/ubsan-log-path.so"
  # allocator_may_return_null: an allocation too large for the machine
  # fails as glibc's does (V8 then throws a RangeError) instead of ending
  # the process (test/fixtures/buffers/alloc-mem.mjs asks for 4 PiB).
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:log_path=$logs/asan"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
  export NODEMPI_SANITIZER_LOGS="$logs"
  exec npx vitest run -c scripts/vitest.asan.config.ts --exclude 'test/native/**' \
    --exclude 'test/process/npm-pack-install.test.ts' "$@"
) || vitest_status=$?

# A log that only says an allocation was refused (allocator_may_return_null)
# is not a report (test/helpers/sanitizer-reports.ts).
find "$logs" -type f -name '*asan.*' -exec grep -L -v 'WARNING: AddressSanitizer failed to allocate' {} + 2>/dev/null |
  xargs -r rm -f
reports=$(find "$logs" -type f \( -name 'asan.*' -o -name 'ubsan.*' -o -name '*-asan.*' -o -name '*-ubsan.*' \) | sort)
if [ -n "$reports" ]; then
  echo "== sanitizer reports"
  for f in $reports; do
    echo "--- $f"
    cat "$f"
  done
fi
count=$(printf '%s' "$reports" | grep -c . || true)
echo "== test:asan: C++ tests $([ $ctest_status -eq 0 ] && echo passed || echo FAILED)," \
  "vitest $([ $vitest_status -eq 0 ] && echo passed || echo FAILED), $count sanitizer report(s), $((SECONDS - start)) s"
[ $ctest_status -eq 0 ] && [ $vitest_status -eq 0 ] && [ "$count" -eq 0 ]
