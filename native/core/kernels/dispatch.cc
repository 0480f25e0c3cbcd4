// Picks the kernel table for this CPU and answers lookup(). The choice is
// made once, at first use:
//   1. NODEMPI_KERNELS=scalar|avx2|avx512|neon|auto, if set, names a table;
//      a table the CPU cannot run (or this build for another architecture
//      does not have) falls back to auto with a one-line warning, so a
//      setting shared by a job's hosts never crashes on older CPUs. A name
//      of no table at all is refused at init (core/tuning.cc).
//   2. auto: the widest table whose instructions the CPU (and OS) support.
//   3. select_isa() may switch tables later (tests compare them all).
// The active table is one atomic pointer, so lookup() from any thread costs
// a single acquire load once the choice is made.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "core/kernels/kernels.h"
#include "core/kernels/table.h"
#include "core/tuning.h"

namespace nodempi::kernels {
namespace {

struct Isa {
  const char* name;
  const Table& (*table)();
  bool (*supported)();
};

bool always() { return true; }

#if defined(__x86_64__)
// __builtin_cpu_supports also checks that the OS saves the wide registers
// (XCR0), not just the CPUID bits. Both vector tables convert FLOAT16 with
// F16C, which every CPU with AVX2 has had so far; it is checked all the same.
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c");
}
#endif

// Widest first: auto takes the first one the CPU supports.
constexpr Isa kIsas[] = {
#if defined(__x86_64__)
    {"avx512", avx512_table, has_avx512},
    {"avx2", avx2_table, has_avx2},
#endif
#if defined(__aarch64__)
    {"neon", neon_table, always},  // Advanced SIMD is part of the aarch64 baseline
#endif
    {"scalar", scalar_table, always},
};

// Every table's name, on any architecture: a job's hosts share one
// environment, and a name that only another host's CPU has is not a typo.
constexpr const char* kAllNames[] = {"avx512", "avx2", "neon", "scalar"};

const Isa* best() {
  for (const Isa& isa : kIsas) {
    if (isa.supported()) return &isa;
  }
  return nullptr;  // unreachable: scalar is always supported
}

const Isa* find(const char* name) {
  for (const Isa& isa : kIsas) {
    if (std::strcmp(isa.name, name) == 0) return &isa;
  }
  return nullptr;
}

std::atomic<const Isa*> g_active{nullptr};
std::once_flag g_init_once;

void init_from_env() {
  const Isa* chosen = best();
  const char* env = tuning().kernels.c_str();
  if (*env != '\0') {
    const Isa* wanted = find(env);
    if (wanted != nullptr && wanted->supported()) {
      chosen = wanted;
    } else {
      std::fprintf(stderr, "nodempi: NODEMPI_KERNELS=%s is %s; using the %s kernels\n", env,
                   wanted == nullptr ? "not built for this architecture" : "not supported by this CPU",
                   chosen->name);
    }
  }
  g_active.store(chosen, std::memory_order_release);
}

const Isa* active() {
  const Isa* isa = g_active.load(std::memory_order_acquire);
  if (isa != nullptr) return isa;
  std::call_once(g_init_once, init_from_env);
  return g_active.load(std::memory_order_acquire);
}

}  // namespace

bool known_table(const char* name) {
  if (std::strcmp(name, "auto") == 0) return true;
  for (const char* known : kAllNames) {
    if (std::strcmp(name, known) == 0) return true;
  }
  return false;
}

const char* table_names() {
  static const std::string names = [] {
    std::string out;
    for (const char* known : kAllNames) out += (out.empty() ? "" : ", ") + std::string(known);
    return out;
  }();
  return names.c_str();
}

ReduceFn lookup(OpId op, TypeId type) {
  // The ids arrive from JS; out-of-range values are "no such reduction".
  if (op >= OpId::COUNT || type >= TypeId::COUNT) return nullptr;
  return active()->table().get(op, type);
}

size_t type_size(TypeId type) {
  switch (type) {
    case TypeId::I8: case TypeId::U8: return 1;
    case TypeId::I16: case TypeId::U16: return 2;
    case TypeId::I32: case TypeId::U32: return 4;
    case TypeId::I64: case TypeId::U64: return 8;
    case TypeId::F32: return sizeof(float);
    case TypeId::F64: return sizeof(double);
    case TypeId::F80: return sizeof(long double);
    case TypeId::C32: return 2 * sizeof(float);
    case TypeId::C64: return 2 * sizeof(double);
    case TypeId::C80: return 2 * sizeof(long double);
    case TypeId::BOOL: return 1;
    case TypeId::LOGICAL: return 4;
    case TypeId::BYTE: return 1;
    case TypeId::FLOAT_INT: return sizeof(FloatInt);
    case TypeId::DOUBLE_INT: return sizeof(DoubleInt);
    case TypeId::LONG_INT: return sizeof(LongInt);
    case TypeId::TWO_INT: return sizeof(TwoInt);
    case TypeId::SHORT_INT: return sizeof(ShortInt);
    case TypeId::LONG_DOUBLE_INT: return sizeof(LongDoubleInt);
    case TypeId::TWO_FLOAT: return sizeof(TwoFloat);
    case TypeId::TWO_DOUBLE: return sizeof(TwoDouble);
    case TypeId::F16: case TypeId::BF16: return 2;
    case TypeId::COUNT: break;
  }
  return 0;
}

const char* op_name(OpId op) {
  static const char* const names[] = {"MAX", "MIN", "SUM", "PROD", "LAND", "BAND", "LOR",
                                      "BOR", "LXOR", "BXOR", "MAXLOC", "MINLOC", "REPLACE", "NO_OP"};
  static_assert(sizeof names / sizeof names[0] == size_t(OpId::COUNT), "a name per op");
  return op < OpId::COUNT ? names[size_t(op)] : nullptr;
}

const char* type_name(TypeId type) {
  static const char* const names[] = {
      "SIGNED_CHAR", "UNSIGNED_CHAR", "SHORT", "UNSIGNED_SHORT", "INT", "UNSIGNED", "LONG", "UNSIGNED_LONG",
      "FLOAT", "DOUBLE", "LONG_DOUBLE", "C_COMPLEX", "C_DOUBLE_COMPLEX", "C_LONG_DOUBLE_COMPLEX",
      "C_BOOL", "LOGICAL", "BYTE", "FLOAT_INT", "DOUBLE_INT", "LONG_INT", "TWO_INT", "SHORT_INT",
      "LONG_DOUBLE_INT", "TWO_REAL", "TWO_DOUBLE_PRECISION", "FLOAT16", "BFLOAT16"};
  static_assert(sizeof names / sizeof names[0] == size_t(TypeId::COUNT), "a name per type");
  return type < TypeId::COUNT ? names[size_t(type)] : nullptr;
}

const char* active_isa() { return active()->name; }

bool select_isa(const char* name) {
  if (name == nullptr) return false;
  // Settle the start-up choice first, so it cannot overwrite this one later.
  active();
  const Isa* isa = std::strcmp(name, "auto") == 0 ? best() : find(name);
  if (isa == nullptr || !isa->supported()) return false;
  g_active.store(isa, std::memory_order_release);
  return true;
}

}  // namespace nodempi::kernels
