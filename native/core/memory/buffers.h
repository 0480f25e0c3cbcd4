// Memory for message buffers (mpi.allocMem, as MPI_Alloc_mem): a buffer
// placed at a page boundary inside a larger allocation (malloc's large
// blocks start 16 bytes past a page), and from kHugePagesFrom on at a huge
// page boundary with huge pages. A single copy between processes (CMA,
// which both the shm backend and the MPI libraries use from 64 KiB or so)
// pins and walks a buffer page by page: over huge pages, 1 MiB messages on
// the mpi backend took less than half the time (bench/P2P.md).
#pragma once
#include <cstddef>

namespace nodempi::memory {

// How many bytes more than `bytes` to allocate for place_buffer to find
// room; 0 if that overflows size_t.
size_t placement_slack(size_t bytes);

// Places a buffer of `bytes` (> 0) inside [data, data + bytes +
// placement_slack(bytes)) and returns its offset from `data`: at a page
// boundary; from kHugePagesFrom (core/memory/huge_pages.h) on, where huge
// pages are on, at a huge page boundary, the whole huge pages it touches
// advised MADV_HUGEPAGE and, where the kernel can (Linux 6.1+), collapsed
// into huge pages at once (the allocation may have been written already).
size_t place_buffer(void* data, size_t bytes);

}  // namespace nodempi::memory
