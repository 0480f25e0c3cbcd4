#!/bin/sh
# The kernel tables' code generation (CTest runs it on the release build):
# kernels_avx512 must use zmm registers, kernels_avx2 ymm, kernels_scalar
# neither, and no kernel object may contain fused multiply-adds (they would
# break bit-identity between tables).
#
# Usage: codegen.sh OBJECTS   (one argument, object files separated by ';',
#                              as CMake's $<TARGET_OBJECTS:nodempi_core> gives)
set -eu
if ! command -v objdump >/dev/null; then
  echo "objdump not found: skipping the code generation check"
  exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
found=0
IFS=';'
for obj in $*; do
  case "$obj" in
    */kernels_scalar.cc.o | */kernels_avx2.cc.o | */kernels_avx512.cc.o)
      isa=${obj##*/kernels_}
      # Disassemble to files first: `objdump | grep -q` could end objdump early.
      objdump -d "$obj" >"$out/${isa%.cc.o}.s"
      found=$((found + 1))
      ;;
  esac
done
unset IFS
if [ "$found" -ne 3 ]; then
  echo "codegen.sh: expected the scalar, avx2 and avx512 kernel objects, found $found"
  exit 1
fi
grep -q zmm "$out/avx512.s" || { echo "kernels_avx512 has no zmm instructions"; exit 1; }
grep -q ymm "$out/avx2.s" || { echo "kernels_avx2 has no ymm instructions"; exit 1; }
if grep -qE '[yz]mm' "$out/scalar.s"; then
  echo "kernels_scalar uses AVX registers"
  exit 1
fi
if grep -qE '[[:space:]]vfn?m(add|sub)' "$out"/*.s; then
  echo "a kernel object contains FMA instructions"
  exit 1
fi
echo "codegen: avx512 uses zmm, avx2 uses ymm, scalar neither, no FMA anywhere"
