#!/usr/bin/env bash
# npm run test:tsan [-- ctest arguments]: the C++ tests that run threads
# (transport, progress lanes and engine, collectives with thread ranks and several
# contexts per rank) under ThreadSanitizer, in their long form, with zero
# reports. TSan sees each rank's own threads, not the ranks synchronising
# through the segment (each maps it at an address of its own).
# Built into build-tsan/ (CMakeLists.txt, NODEMPI_TSAN=ON); the addon is
# not built (Node cannot load a TSan build).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
cmake -S . -B build-tsan -DNODEMPI_TESTS=ON -DNODEMPI_TSAN=ON >/dev/null || exit 1
cmake --build build-tsan --parallel 2 || exit 1
NODEMPI_TEST_LONG=1 ctest --test-dir build-tsan --output-on-failure "$@"
status=$?
echo "== test:tsan: $([ $status -eq 0 ] && echo passed || echo FAILED), $((SECONDS - start)) s"
exit $status
