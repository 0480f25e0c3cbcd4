#!/usr/bin/env bash
# npm run test:tsan [-- ctest arguments]: the C++ tests that run threads
# (transport, progress lanes, collectives with thread ranks and several
# contexts per rank) under ThreadSanitizer, in their long form, with zero
# reports. TSan sees each rank's own threads, not the ranks synchronising
# through the segment (each maps it at an address of its own).
# Built into build-tsan/ (CMakeLists.txt, NODEMPI_TSAN=ON); the addon is
# not built (Node cannot load a TSan build).
#
# Tests labelled known_bug show a bug not fixed yet (CMakeLists.txt says
# which); they are left out and named. `ctest --test-dir build-tsan -L
# known_bug` runs them.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
cmake -S . -B build-tsan -DNODEMPI_TESTS=ON -DNODEMPI_TSAN=ON >/dev/null || exit 1
cmake --build build-tsan --parallel 2 || exit 1
NODEMPI_TEST_LONG=1 ctest --test-dir build-tsan --output-on-failure -LE known_bug "$@"
status=$?
known=$(ctest --test-dir build-tsan -N -L known_bug | sed -n 's/^ *Test *#[0-9]*: //p' | tr '\n' ' ')
[ -n "$known" ] && echo "== test:tsan: not run, known bugs (ctest --test-dir build-tsan -L known_bug): $known"
echo "== test:tsan: $([ $status -eq 0 ] && echo passed || echo FAILED), $((SECONDS - start)) s"
exit $status
