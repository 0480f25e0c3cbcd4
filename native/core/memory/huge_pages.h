// Transparent huge pages for large message buffers: those handed to the
// system MPI, and those mpi.allocMem maps (core/memory/buffers.h).
//
// Open MPI's and MPICH's shared-memory transports move a large message by
// a single copy between processes (CMA), which pins and walks the
// buffer's pages one at a time: over 4 KiB pages a 4-16 MiB bcast takes
// about twice as long as over 2 MiB pages (bench/BACKENDS.md). Python
// users get huge pages without asking, since numpy advises them for every
// array of 4 MiB and more; a TypedArray's memory comes from malloc, which
// does not. So the mpi backend asks for them for the buffers it is given.
#pragma once
#include <cstddef>

namespace nodempi::memory {

// The smallest buffer offered huge pages (numpy's threshold).
constexpr size_t kHugePagesFrom = size_t(4) << 20;
// A transparent huge page on x86-64 and on arm64 with 4 KiB base pages.
constexpr size_t kHugePage = size_t(2) << 20;

// Asks the kernel to back the 2 MiB-aligned interior of [p, p + n) with
// huge pages, when n is 4 MiB or more: the first time it sees a buffer it
// marks it (MADV_HUGEPAGE: pages faulted from then on are huge), from the
// second on it collapses what is there (MADV_COLLAPSE, Linux 6.1+), so
// that a buffer used once pays no copy for it. Does nothing where
// transparent huge pages are off ("never") or absent (another OS), or
// with NODEMPI_HUGE_PAGES=0. Any thread.
void prefer_huge_pages(const void* p, size_t n);

// Backs [p, p + n), huge-page aligned and whole huge pages, with huge
// pages: MADV_HUGEPAGE for pages faulted from now on, and MADV_COLLAPSE
// (Linux 6.1+, best effort) for those already there. Nothing where huge
// pages are off (huge_pages_on). Any thread.
void make_huge_pages(void* p, size_t n);

// Whether huge pages are to be asked for at all: not with
// NODEMPI_HUGE_PAGES=0, nor where transparent huge pages are off ("never")
// or absent.
bool huge_pages_on();

}  // namespace nodempi::memory
