#include "core/transport/cma.h"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "core/transport/wait.h"
#include "core/tuning.h"

namespace nodempi::transport {

namespace {

int forced_mode() { return tuning().cma; }

}  // namespace

CmaMode cma_mode(uint32_t nranks) {
  if (forced_mode() >= 0) return CmaMode(forced_mode());
  return oversubscribed(nranks) ? CmaMode::OFF : CmaMode::ON;
}

// Below NODEMPI_CMA_MIN a syscall per peer costs more than the copy through
// the slot it saves.
size_t cma_min_bytes() { return tuning().cma_min; }

void cma_permit(int32_t launcher_pid) {
#ifdef PR_SET_PTRACER
  // Fails with EINVAL where Yama is not built in; then nothing is needed.
  if (launcher_pid > 0) prctl(PR_SET_PTRACER, static_cast<unsigned long>(launcher_pid), 0, 0, 0);
#else
  (void)launcher_pid;
#endif
}

namespace {

bool copy(bool write, int32_t pid, void* local, void* remote, size_t len) {
  if (pid == int32_t(getpid())) {
    if (write) std::memcpy(remote, local, len);
    else std::memcpy(local, remote, len);
    return true;
  }
  if (forced_mode() == int(CmaMode::REFUSE)) return false;
  size_t done = 0;
  while (done < len) {
    iovec l{static_cast<char*>(local) + done, len - done};
    iovec r{static_cast<char*>(remote) + done, len - done};
    ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

}  // namespace

bool cma_read(int32_t pid, void* local, const void* remote, size_t len) {
  return len == 0 || copy(false, pid, local, const_cast<void*>(remote), len);
}

bool cma_write(int32_t pid, const void* local, void* remote, size_t len) {
  return len == 0 || copy(true, pid, const_cast<void*>(local), remote, len);
}

}  // namespace nodempi::transport
