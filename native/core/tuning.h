// Every NODEMPI_* setting of the core, read from the environment once per
// process (the launcher passes its environment to every rank, so all ranks
// see the same values). A value that does not parse, or is out of range,
// leaves the default in place and is named in `errors`, which init and the
// launcher refuse to run with (lib/settings.ts). README.md, "Tuning" and
// "Across machines", describes them for users.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/coll/select.h"

namespace nodempi {

struct Tuning {
  // NODEMPI_CMA: a forced transport::CmaMode (0 off, 1 on, fallback,
  // refuse), or -1: on unless ranks outnumber cores (transport/cma.h).
  int cma = -1;
  // NODEMPI_CMA_MIN: bytes per rank's block from which single copy is taken.
  size_t cma_min = size_t(64) * 1024;
  // NODEMPI_SLOT_KB: KiB per slot half, 4 to 65536; 0 by world size
  // (transport/segment.cc).
  size_t slot_kb = 0;
  // NODEMPI_SPIN_US: microseconds a waiter spins before yielding, below
  // 4 s; kByJob: 50, or 0 when ranks outnumber cores (transport/wait.cc).
  static constexpr uint32_t kByJob = UINT32_MAX;
  uint32_t spin_us = kByJob;
  // NODEMPI_YIELD_US: microseconds it then yields before sleeping, below 4 s.
  uint32_t yield_us = 2000;
  // NODEMPI_KERNELS: a kernel table's name on some architecture
  // (kernels::known_table); empty for the widest the CPU runs.
  // kernels/dispatch.cc falls back where this build or CPU lacks it.
  std::string kernels;
  // NODEMPI_CHECK_SAME=0: the root of a bcast or scatter does not wait to
  // see that the others called the same (coll/bcast.cc, coll/scatter.cc),
  // the non-roots of those and of a gather compare with the root alone, and
  // with ranks outnumbering cores the barrier lets rank 0 leave first
  // (coll/barrier.cc); every other collective still compares every rank's
  // signature.
  bool check_same = true;
  // NODEMPI_ALGO: algorithms forced per collective (coll/select.h).
  coll::ForcedAlgos algo;
  // NODEMPI_HUGE_PAGES=0: no huge pages for large buffers (memory/huge_pages.cc).
  bool huge_pages = true;
  // NODEMPI_MPI_PERSISTENT=emulate: persistent collectives of the mpi
  // backend as nonblocking ones started anew (mpi/mpi.cc).
  bool emulate_persistent = false;
  // Every value that did not parse, as "NODEMPI_X must be ..., got \"v\"",
  // joined by "; "; empty when all did.
  std::string errors;

  // From `get` (getenv, or a map: a test's, or the environment a launcher
  // is about to give its ranks). `get` returns nullptr for an unset name;
  // what it returns need only live until its next call.
  static Tuning from(const std::function<const char*(const char*)>& get);
};

// The process's settings, read at first use.
const Tuning& tuning();
// Reads the environment again: for tests that change it, before any other
// thread runs collectives.
void retune();

}  // namespace nodempi
