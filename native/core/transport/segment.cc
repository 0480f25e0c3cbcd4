#include "core/transport/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/transport/cma.h"
#include "core/transport/slot_sets.h"
#include "core/tuning.h"

namespace nodempi::transport {
namespace {

constexpr size_t kPage = 4096;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

Geometry Geometry::for_ranks(uint32_t nranks) {
  Geometry g{};
  g.nranks = nranks;
  // Large enough that a pipelined 1 MiB message takes few rounds, small
  // enough that both halves of every rank stay in a shared L2/L3 slice.
  g.half_bytes = nranks <= 8 ? 256 * 1024 : nranks <= 32 ? 64 * 1024 : 16 * 1024;
  // NODEMPI_SLOT_KB overrides it for tuning, and lets tests cover the
  // chunked paths with small messages. The launcher passes its environment
  // on, so it and the ranks agree.
  if (tuning().slot_kb) g.half_bytes = tuning().slot_kb * 1024;
  // The v-collectives cut a half into one lane per rank, each starting with
  // a 16-byte header in the first phase.
  g.half_bytes = std::max(g.half_bytes, size_t(nranks) * 64);
  g.ctrl_offset = round_up(sizeof(Header), kPage);
  size_t ctrl_bytes = sizeof(CtrlLine) * size_t(kContexts) * nranks;
  g.headers_offset = round_up(g.ctrl_offset + ctrl_bytes, kPage);
  size_t header_bytes = kHeaderLines * kCacheLine * size_t(kContexts) * nranks;
  g.slots_offset = round_up(g.headers_offset + header_bytes, kPage);
  size_t slots_end = g.slots_offset + size_t(nranks) * kSets * 2 * g.half_bytes;
  // Point-to-point: a ring per ordered pair. Like the slot sets these are
  // holes until used: a pair that never talks costs no memory.
  g.doorbells_offset = round_up(slots_end, kPage);
  g.rings_offset = round_up(g.doorbells_offset + sizeof(Doorbell) * nranks, kPage);
  g.ring_stride = round_up(sizeof(Ring), kPage);
  g.total_bytes = g.rings_offset + size_t(nranks) * nranks * g.ring_stride;
  return g;
}

Segment::Segment() = default;

namespace {

// The header lines, slot sets and rings are mostly holes; a core dump need
// not write them out.
void no_dump(void* base, const Geometry& geo) {
  madvise(static_cast<uint8_t*>(base) + geo.headers_offset, geo.total_bytes - geo.headers_offset, MADV_DONTDUMP);
}

}  // namespace

Segment* Segment::create(uint32_t nranks, std::string* error) {
  if (nranks == 0 || nranks > kMaxRanks) {
    *error = "world size must be between 1 and " + std::to_string(kMaxRanks);
    return nullptr;
  }
  Geometry geo = Geometry::for_ranks(nranks);
  // A name for diagnostics only (/proc/PID/maps shows /memfd:nodempi-...):
  // the segment is a memfd, which has no path anyone could open or create
  // first, and goes when the last process that maps it or holds it ends.
  uint8_t rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
    *error = errno_text("getrandom");
    return nullptr;
  }
  char name[64];
  int n = std::snprintf(name, sizeof name, "nodempi-");
  for (uint8_t b : rnd) n += std::snprintf(name + n, sizeof name - n, "%02x", b);

  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    *error = errno_text("memfd_create");
    return nullptr;
  }
  // Only the ranks' owner, should anyone reach it through /proc/PID/fd.
  if (fchmod(fd, 0600) != 0 || ftruncate(fd, off_t(geo.total_bytes)) != 0) {
    *error = errno_text("sizing the shared-memory segment");
    ::close(fd);
    return nullptr;
  }
  void* base = mmap(nullptr, geo.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = errno_text("mmap");
    ::close(fd);
    return nullptr;
  }
  no_dump(base, geo);
  // tmpfs pages start zeroed, so every atomic starts at 0.
  Header* h = new (base) Header;
  h->magic = kMagic;
  h->version = kVersion;
  h->nranks = nranks;
  h->contexts = kContexts;
  h->launcher_pid = uint32_t(getpid());
  h->half_bytes = geo.half_bytes;
  h->total_bytes = geo.total_bytes;
  h->contexts_state[0].in_use.store(1, std::memory_order_relaxed);  // COMM_WORLD

  auto* s = new Segment;
  s->header_ = h;
  s->base_ = base;
  s->geo_ = geo;
  s->fd_ = fd;
  s->name_ = name;
  return s;
}

Segment* Segment::attach(int fd, uint32_t rank, uint32_t nranks, std::string* error) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = errno_text("fstat of the inherited segment descriptor");
    return nullptr;
  }
  Geometry geo = Geometry::for_ranks(nranks);
  if (nranks == 0 || nranks > kMaxRanks || rank >= nranks || size_t(st.st_size) != geo.total_bytes) {
    *error = "the inherited segment does not match NODEMPI_RANK/NODEMPI_SIZE";
    return nullptr;
  }
  void* base = mmap(nullptr, geo.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = errno_text("mmap");
    return nullptr;
  }
  auto* h = static_cast<Header*>(base);
  if (h->magic != kMagic || h->version != kVersion || h->nranks != nranks ||
      h->half_bytes != geo.half_bytes || h->total_bytes != geo.total_bytes) {
    munmap(base, geo.total_bytes);
    *error = "the shared-memory segment header is not from this nodempi version";
    return nullptr;
  }
  uint32_t unclaimed = 0;
  if (!h->ranks[rank].claimed.compare_exchange_strong(unclaimed, 1, std::memory_order_acq_rel)) {
    int32_t pid = h->ranks[rank].pid.load(std::memory_order_acquire);
    munmap(base, geo.total_bytes);
    *error = "rank " + std::to_string(rank) + " of this job is already running (pid " + std::to_string(pid) +
             "); a process that inherited a rank's environment and descriptor cannot join the job as that rank";
    return nullptr;
  }
  no_dump(base, geo);
  cma_permit(int32_t(h->launcher_pid));
  h->ranks[rank].pid.store(int32_t(getpid()), std::memory_order_release);
  h->attached.fetch_add(1, std::memory_order_acq_rel);

  auto* s = new Segment;
  s->header_ = h;
  s->base_ = base;
  s->geo_ = geo;
  s->rank_ = rank;
  s->sets_ = std::make_unique<SlotSets>(s);
  // The rank keeps no descriptor: its own children must not inherit one.
  ::close(fd);
  return s;
}

Segment::~Segment() {
  if (base_) munmap(base_, geo_.total_bytes);
  close_fd();
}

void Segment::close_fd() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

CtrlLine* Segment::ctrl(uint32_t context, uint32_t member) const {
  auto* lines = reinterpret_cast<CtrlLine*>(static_cast<uint8_t*>(base_) + geo_.ctrl_offset);
  return &lines[size_t(context) * geo_.nranks + member];
}

int Segment::alloc_context(uint32_t members) {
  for (uint32_t c = 1; c < kContexts; ++c) {
    uint32_t expected = 0;
    ContextSlot& st = header_->contexts_state[c];
    if (st.in_use.load(std::memory_order_relaxed) ||
        !st.in_use.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      continue;
    }
    // Nobody uses a free context, so its lines can be reset; the members
    // learn the id through a collective on the parent, which orders this
    // reset before their first use.
    for (uint32_t m = 0; m < members && m < geo_.nranks; ++m) {
      CtrlLine* line = ctrl(c, m);
      line->seq.store(0, std::memory_order_relaxed);
      line->waiters.store(0, std::memory_order_relaxed);
      line->set.store(0, std::memory_order_relaxed);
      line->done.store(0, std::memory_order_relaxed);
    }
    st.generation.fetch_add(1, std::memory_order_relaxed);
    st.members_left.store(members, std::memory_order_release);
    return int(c);
  }
  return -1;
}

void Segment::release_context(uint32_t context) {
  if (context == 0 || context >= kContexts) return;
  ContextSlot& st = header_->contexts_state[context];
  if (st.members_left.fetch_sub(1, std::memory_order_acq_rel) == 1) st.in_use.store(0, std::memory_order_release);
}

Doorbell* Segment::doorbell(uint32_t rank) const {
  auto* bells = reinterpret_cast<Doorbell*>(static_cast<uint8_t*>(base_) + geo_.doorbells_offset);
  return &bells[rank];
}

Ring* Segment::ring(uint32_t src, uint32_t dst) const {
  size_t index = size_t(src) * geo_.nranks + dst;
  return reinterpret_cast<Ring*>(static_cast<uint8_t*>(base_) + geo_.rings_offset + index * geo_.ring_stride);
}

uint8_t* Segment::headers(uint32_t context, uint32_t member) const {
  size_t index = size_t(context) * geo_.nranks + member;
  return static_cast<uint8_t*>(base_) + geo_.headers_offset + index * kHeaderLines * kCacheLine;
}

uint8_t* Segment::slot(uint32_t rank, uint32_t set, uint32_t half) const {
  size_t index = (size_t(set) * geo_.nranks + rank) * 2 + (half & 1);
  return static_cast<uint8_t*>(base_) + geo_.slots_offset + index * geo_.half_bytes;
}

}  // namespace nodempi::transport
