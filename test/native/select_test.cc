// The selection table (coll/select.h) and the tuning reader (tuning.h):
//   1. each collective's automatic choice on both sides of its threshold;
//   2. NODEMPI_ALGO forcing an algorithm where it can run the call, and
//      the automatic choice where it cannot;
//   3. parsing NODEMPI_ALGO, bad entries described and left out;
//   4. every NODEMPI_* knob: its default, valid values, and the error that
//      names a value that does not parse (init refuses to run with it).
#include <map>
#include <string>

#include "check.h"
#include "core/coll/context.h"
#include "core/coll/select.h"
#include "core/tuning.h"

using namespace nodempi;
using namespace nodempi::coll;
using nodempi::test::g_context;

namespace {

constexpr size_t kHalf = 256 * 1024 - 64;  // data bytes of a default half
constexpr size_t kSmallHalf = 4096 - 64;   // NODEMPI_SLOT_KB=4
constexpr size_t kMin = 64 * 1024;         // NODEMPI_CMA_MIN's default

Algo pick(uint32_t kind, uint64_t bytes, size_t half = kHalf, bool single = true, Algo forced = Algo::AUTO) {
  return select_for(kind, bytes, half, single, kMin, forced);
}

#define CHECK_ALGO(a, b) CHECK_EQ(int(a), int(b))

void automatic() {
  g_context = "allreduce: flat up to 8 KiB or a half";
  CHECK_ALGO(pick(ALLREDUCE, 0), Algo::FLAT);
  CHECK_ALGO(pick(ALLREDUCE, 8192), Algo::FLAT);
  CHECK_ALGO(pick(ALLREDUCE, 8193), Algo::SLICED);
  CHECK_ALGO(pick(ALLREDUCE, kSmallHalf, kSmallHalf), Algo::FLAT);
  CHECK_ALGO(pick(ALLREDUCE, kSmallHalf + 1, kSmallHalf), Algo::SLICED);

  g_context = "reduce: flat within a half up to 8 KiB or a quarter half";
  CHECK_ALGO(pick(REDUCE, 8192), Algo::FLAT);
  CHECK_ALGO(pick(REDUCE, kHalf / 4), Algo::FLAT);
  CHECK_ALGO(pick(REDUCE, kHalf / 4 + 1), Algo::SLICED);
  CHECK_ALGO(pick(REDUCE, kSmallHalf, kSmallHalf), Algo::FLAT);
  CHECK_ALGO(pick(REDUCE, kSmallHalf + 1, kSmallHalf), Algo::SLICED);

  g_context = "direct from NODEMPI_CMA_MIN when single copy is on";
  for (uint32_t kind : {BCAST, GATHER, SCATTER, ALLGATHER, ALLGATHERV, ALLTOALL}) {
    Algo slots = kind == BCAST ? Algo::PIPELINED : Algo::FLAT;
    CHECK_ALGO(pick(kind, kMin - 1), slots);
    CHECK_ALGO(pick(kind, kMin), Algo::DIRECT);
    CHECK_ALGO(pick(kind, uint64_t(1) << 30), Algo::DIRECT);
    CHECK_ALGO(pick(kind, kMin, kHalf, false), slots);
  }
  g_context = "scan and exscan: direct up to 1 MiB";
  for (uint32_t kind : {SCAN, EXSCAN}) {
    CHECK_ALGO(pick(kind, kMin - 1), Algo::FLAT);
    CHECK_ALGO(pick(kind, kMin), Algo::DIRECT);
    CHECK_ALGO(pick(kind, 1 << 20), Algo::DIRECT);
    CHECK_ALGO(pick(kind, (1 << 20) + 1), Algo::FLAT);
    CHECK_ALGO(pick(kind, kMin, kHalf, false), Algo::FLAT);
  }
  g_context = "v-collectives: direct allowed whenever single copy is on";
  for (uint32_t kind : {GATHERV, SCATTERV, ALLTOALLV}) {
    CHECK_ALGO(pick(kind, 0), Algo::DIRECT);
    CHECK_ALGO(pick(kind, 0, kHalf, false), Algo::FLAT);
  }
  g_context = "barrier: fan when ranks outnumber cores with the check off";
  CHECK_ALGO(select_for(BARRIER, 0, kHalf, true, kMin, Algo::AUTO, true), Algo::FAN);
  CHECK_ALGO(select_for(BARRIER, 0, kHalf, true, kMin, Algo::AUTO, false), Algo::FLAT);
  g_context = "one algorithm";
  CHECK_ALGO(pick(BARRIER, 0), Algo::FLAT);
  CHECK_ALGO(pick(REDUCE_SCATTER, 1 << 20), Algo::FLAT);
}

void forced() {
  g_context = "forced reductions";
  for (uint32_t kind : {ALLREDUCE, REDUCE}) {
    CHECK_ALGO(pick(kind, 8, kHalf, true, Algo::SLICED), Algo::SLICED);
    CHECK_ALGO(pick(kind, 0, kHalf, true, Algo::SLICED), Algo::FLAT);  // nothing to slice
    CHECK_ALGO(pick(kind, kHalf, kHalf, true, Algo::FLAT), Algo::FLAT);
    CHECK_ALGO(pick(kind, kHalf + 1, kHalf, true, Algo::FLAT), Algo::SLICED);  // not in one half
    CHECK_ALGO(pick(kind, 8, kHalf, true, Algo::DIRECT), Algo::FLAT);  // not one of its algorithms
  }
  g_context = "forced direct or slots";
  CHECK_ALGO(pick(BCAST, 8, kHalf, true, Algo::DIRECT), Algo::DIRECT);
  CHECK_ALGO(pick(BCAST, 0, kHalf, true, Algo::DIRECT), Algo::DIRECT);
  CHECK_ALGO(pick(BCAST, 8, kHalf, false, Algo::DIRECT), Algo::PIPELINED);  // no single copy
  CHECK_ALGO(pick(BCAST, 1 << 20, kHalf, true, Algo::PIPELINED), Algo::PIPELINED);
  CHECK_ALGO(pick(BCAST, 1 << 20, kHalf, true, Algo::FLAT), Algo::DIRECT);  // bcast has no flat
  CHECK_ALGO(pick(SCAN, uint64_t(1) << 24, kHalf, true, Algo::DIRECT), Algo::DIRECT);
  CHECK_ALGO(pick(ALLTOALL, 1 << 20, kSmallHalf, true, Algo::FLAT), Algo::FLAT);
  CHECK_ALGO(pick(GATHERV, 0, kHalf, true, Algo::FLAT), Algo::FLAT);
  CHECK_ALGO(pick(GATHERV, 0, kHalf, false, Algo::DIRECT), Algo::FLAT);
  CHECK_ALGO(pick(99, 8, kHalf, true, Algo::DIRECT), Algo::AUTO);  // no such collective
  CHECK_ALGO(pick(BARRIER, 0, kHalf, true, Algo::FAN), Algo::FAN);
  CHECK_ALGO(select_for(BARRIER, 0, kHalf, true, kMin, Algo::FLAT, true), Algo::FLAT);
}

void parsing() {
  g_context = "NODEMPI_ALGO";
  std::string err;
  ForcedAlgos f = parse_forced_algos("allreduce:sliced,bcast:direct,,reduceScatter:flat,alltoallv:flat", &err);
  CHECK_ALGO(f.kind[ALLREDUCE], Algo::SLICED);
  CHECK_ALGO(f.kind[BCAST], Algo::DIRECT);
  CHECK_ALGO(f.kind[ALLTOALLV], Algo::FLAT);
  CHECK_ALGO(f.kind[REDUCE], Algo::AUTO);
  CHECK_ALGO(f.kind[REDUCE_SCATTER], Algo::AUTO);
  CHECK(err == "'reduceScatter:flat' names a collective with one algorithm (flat)");

  err.clear();
  f = parse_forced_algos("allreduce:ring,nope:flat,scan,exscan:direct,bcast:flat,reduce:auto", &err);
  CHECK_ALGO(f.kind[ALLREDUCE], Algo::AUTO);
  CHECK_ALGO(f.kind[EXSCAN], Algo::DIRECT);
  CHECK_ALGO(f.kind[BCAST], Algo::AUTO);
  CHECK_ALGO(f.kind[REDUCE], Algo::AUTO);
  CHECK(err ==
        "'allreduce:ring' names no algorithm of allreduce (flat, sliced or auto); 'nope:flat' names no collective; "
        "'scan' is not collective:algorithm; 'bcast:flat' names no algorithm of bcast (pipelined, direct or auto)");

  err.clear();
  f = parse_forced_algos(nullptr, &err);
  CHECK(err.empty());
  for (uint32_t k = 0; k < kKinds; ++k) CHECK_ALGO(f.kind[k], Algo::AUTO);

  f = parse_forced_algos("barrier:fan", &err);
  CHECK(err.empty());
  CHECK_ALGO(f.kind[BARRIER], Algo::FAN);
}

std::map<std::string, std::string> g_env;
const char* fake_env(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
Tuning with(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return Tuning::from(fake_env);
}

// The error of a Tuning read from `env` alone.
std::string error_of(std::map<std::string, std::string> env) { return with(std::move(env)).errors; }

void knobs() {
  g_context = "defaults";
  Tuning t = with({});
  CHECK_EQ(t.cma, -1);
  CHECK_EQ(t.cma_min, size_t(64 * 1024));
  CHECK_EQ(t.slot_kb, size_t(0));
  CHECK_EQ(t.spin_us, Tuning::kByJob);
  CHECK_EQ(t.yield_us, 2000u);
  CHECK(t.kernels.empty() && t.errors.empty());
  CHECK(t.check_same && t.huge_pages && !t.emulate_persistent);

  g_context = "an empty value is unset";
  t = with({{"NODEMPI_CMA", ""}, {"NODEMPI_CMA_MIN", ""}, {"NODEMPI_SLOT_KB", ""}, {"NODEMPI_SPIN_US", ""},
            {"NODEMPI_YIELD_US", ""}, {"NODEMPI_KERNELS", ""}, {"NODEMPI_CHECK_SAME", ""},
            {"NODEMPI_HUGE_PAGES", ""}, {"NODEMPI_MPI_PERSISTENT", ""}, {"NODEMPI_ALGO", ""}});
  CHECK(t.errors.empty());
  CHECK_EQ(t.cma, -1);
  CHECK_EQ(t.yield_us, 2000u);
  CHECK(t.check_same && t.huge_pages && !t.emulate_persistent);

  g_context = "NODEMPI_CMA";
  CHECK_EQ(with({{"NODEMPI_CMA", "0"}}).cma, 0);
  CHECK_EQ(with({{"NODEMPI_CMA", "1"}}).cma, 1);
  CHECK_EQ(with({{"NODEMPI_CMA", "fallback"}}).cma, 2);
  CHECK_EQ(with({{"NODEMPI_CMA", "refuse"}}).cma, 3);
  t = with({{"NODEMPI_CMA", "yes"}});
  CHECK_EQ(t.cma, -1);
  CHECK_STR(t.errors, std::string("NODEMPI_CMA must be \"0\", \"1\", \"fallback\" or \"refuse\", got \"yes\""));

  g_context = "NODEMPI_CMA_MIN";
  CHECK_EQ(with({{"NODEMPI_CMA_MIN", "2048"}}).cma_min, size_t(2048));
  CHECK_EQ(with({{"NODEMPI_CMA_MIN", "0"}}).cma_min, size_t(0));
  t = with({{"NODEMPI_CMA_MIN", "64k"}});
  CHECK_EQ(t.cma_min, size_t(64 * 1024));
  CHECK_STR(t.errors, std::string("NODEMPI_CMA_MIN must be a whole number of bytes below 2^62, got \"64k\""));
  CHECK(!error_of({{"NODEMPI_CMA_MIN", "99999999999999999999999"}}).empty());

  g_context = "NODEMPI_SLOT_KB";
  CHECK_EQ(with({{"NODEMPI_SLOT_KB", "4"}}).slot_kb, size_t(4));
  CHECK_EQ(with({{"NODEMPI_SLOT_KB", "65536"}}).slot_kb, size_t(65536));
  for (const char* bad : {"3", "65537", "-4", " 8", "8 "}) {
    t = with({{"NODEMPI_SLOT_KB", bad}});
    CHECK_EQ(t.slot_kb, size_t(0));
    CHECK_STR(t.errors, "NODEMPI_SLOT_KB must be a whole number of KiB from 4 to 65536, got \"" + std::string(bad) + "\"");
  }

  g_context = "NODEMPI_SPIN_US and NODEMPI_YIELD_US";
  CHECK_EQ(with({{"NODEMPI_SPIN_US", "0"}}).spin_us, 0u);
  CHECK_EQ(with({{"NODEMPI_SPIN_US", "3999999"}}).spin_us, 3999999u);
  t = with({{"NODEMPI_SPIN_US", "4000000"}});
  CHECK_EQ(t.spin_us, Tuning::kByJob);
  CHECK_STR(t.errors, std::string("NODEMPI_SPIN_US must be a whole number of microseconds below 4000000, got \"4000000\""));
  CHECK_EQ(with({{"NODEMPI_YIELD_US", "10"}}).yield_us, 10u);
  t = with({{"NODEMPI_YIELD_US", "1e3"}});
  CHECK_EQ(t.yield_us, 2000u);
  CHECK_STR(t.errors, std::string("NODEMPI_YIELD_US must be a whole number of microseconds below 4000000, got \"1e3\""));

  g_context = "NODEMPI_CHECK_SAME and NODEMPI_HUGE_PAGES";
  CHECK(!with({{"NODEMPI_CHECK_SAME", "0"}}).check_same);
  CHECK(with({{"NODEMPI_CHECK_SAME", "1"}}).check_same);
  // "false" is the trap this refusal closes: read as "not 0", it meant on.
  t = with({{"NODEMPI_CHECK_SAME", "false"}});
  CHECK(t.check_same);
  CHECK_STR(t.errors, std::string("NODEMPI_CHECK_SAME must be \"0\" or \"1\", got \"false\""));
  CHECK(!with({{"NODEMPI_HUGE_PAGES", "0"}}).huge_pages);
  CHECK(with({{"NODEMPI_HUGE_PAGES", "1"}}).huge_pages);
  CHECK_STR(error_of({{"NODEMPI_HUGE_PAGES", "off"}}), std::string("NODEMPI_HUGE_PAGES must be \"0\" or \"1\", got \"off\""));

  g_context = "NODEMPI_MPI_PERSISTENT";
  CHECK(with({{"NODEMPI_MPI_PERSISTENT", "emulate"}}).emulate_persistent);
  t = with({{"NODEMPI_MPI_PERSISTENT", "1"}});
  CHECK(!t.emulate_persistent);
  CHECK_STR(t.errors, std::string("NODEMPI_MPI_PERSISTENT must be \"emulate\", got \"1\""));

  g_context = "NODEMPI_KERNELS";
  CHECK(with({{"NODEMPI_KERNELS", "auto"}}).kernels.empty());
  CHECK(with({{"NODEMPI_KERNELS", "scalar"}}).kernels == "scalar");
  // Another architecture's table is a name, not an error: dispatch falls back.
  t = with({{"NODEMPI_KERNELS", "neon"}});
  CHECK(t.kernels == "neon" && t.errors.empty());
  t = with({{"NODEMPI_KERNELS", "sse"}});
  CHECK(t.kernels.empty());
  CHECK_STR(t.errors, std::string("NODEMPI_KERNELS must be \"auto\" or a kernel table (avx512, avx2, neon, scalar), got \"sse\""));

  g_context = "NODEMPI_ALGO";
  t = with({{"NODEMPI_ALGO", "scan:direct,gather:ring"}});
  CHECK_ALGO(t.algo.kind[SCAN], Algo::DIRECT);
  CHECK_ALGO(t.algo.kind[GATHER], Algo::AUTO);
  CHECK_STR(t.errors, std::string("NODEMPI_ALGO: 'gather:ring' names no algorithm of gather (flat, direct or auto)"));

  g_context = "several errors, quoted";
  CHECK_STR(error_of({{"NODEMPI_CMA", "a\"b\\c\n"}, {"NODEMPI_SPIN_US", "x"}}),
           std::string("NODEMPI_CMA must be \"0\", \"1\", \"fallback\" or \"refuse\", got \"a\\\"b\\\\c\\x0a\"; ") +
               "NODEMPI_SPIN_US must be a whole number of microseconds below 4000000, got \"x\"");
}

}  // namespace

int main() {
  automatic();
  forced();
  parsing();
  knobs();
  return nodempi::test::summary("select_test");
}
