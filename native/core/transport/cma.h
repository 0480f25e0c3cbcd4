// Single-copy transfers between ranks (Linux Cross Memory Attach): a rank
// reads from, or writes to, a peer's buffer directly with
// process_vm_readv/process_vm_writev, instead of both copying through a
// shared-memory slot. Ranks that are threads of one process copy with memcpy.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nodempi::transport {

// Single copy is on by default while ranks do not outnumber the online CPUs:
// there a peer's buffer is read once instead of being copied into a slot
// and out again, and measured on the project's machines (bench/README.md,
// "Single copy") it is faster or level at every size from 64 KiB on. With
// more ranks than cores it is off: the kernel's copy pins pages and runs on
// the copying rank, so ranks that would drain the slots in parallel queue
// behind it.
//   NODEMPI_CMA=1         always take the single-copy path for large messages
//   NODEMPI_CMA=0         never (the slot pipeline only)
//   NODEMPI_CMA=fallback  take its protocol but declare every copy refused
//                         (tests the fallback a refusing kernel causes)
//   NODEMPI_CMA=refuse    as 1, but every copy between processes fails, as
//                         under a kernel that refuses them only when asked
//                         (tests falling back after the copies)
//   NODEMPI_CMA_MIN=B     from B bytes per rank's block (default 64 KiB)
// The launcher passes the environment to every rank; ranks that disagree
// throw ERR_NOT_SAME rather than mix protocols.
enum class CmaMode { OFF, ON, FALLBACK, REFUSE };
// For a job of `nranks` ranks (the world size: the same on every rank).
CmaMode cma_mode(uint32_t nranks);
size_t cma_min_bytes();

// Lets the other ranks (the launcher's descendants) read and write this
// process's memory where Yama's ptrace_scope=1 would refuse siblings;
// process_vm_* needs ptrace access. Nothing else is granted to anyone.
void cma_permit(int32_t launcher_pid);

// `len` bytes from `remote` in process `pid` into `local` (read), or from
// `local` to `remote` (write). False when the kernel refuses (no permission,
// no such process, no CMA in this kernel): the caller falls back.
bool cma_read(int32_t pid, void* local, const void* remote, size_t len);
bool cma_write(int32_t pid, const void* local, void* remote, size_t len);

}  // namespace nodempi::transport
