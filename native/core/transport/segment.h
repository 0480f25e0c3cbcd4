// The job's shared-memory segment: layout, creation by the launcher, and
// attachment by the ranks.
//
// Layout (every part page-aligned, offsets computed from the header alone):
//   Header          magic, version, world size, pids, liveness, abort state
//   control lines   [context][member] one 128-byte CtrlLine each
//   header lines    [context][member] kHeaderLines cache lines each
//   slot sets       [set][world rank] two halves of `half_bytes` each
//   doorbells       [world rank] one Doorbell each (point-to-point)
//   rings           [src][dst] one Ring per ordered pair of world ranks
//
// A communicator costs its members one control line each; data moves
// through slot sets that belong to ranks, not to communicators. A rank
// writes each communicator's data into one of its own sets, which it binds
// to that communicator while in use and hands to another once every member
// has read what it wrote (slot_sets.h). So memory follows how many
// communicators are busy at once, not how many exist. There are as many
// sets per rank as contexts, so a free one always exists: a rank never
// waits for a set, whatever its peers are doing. The mapping is that large
// but sparse: only pages that carried data take memory. Set j of every
// rank sits together, as a communicator's slots did when they were fixed:
// the ranks of a busy communicator mostly write the same low sets, and
// their halves a few pages apart rather than gigabytes apart cost each
// collective less in address translation (bench/CORE.md).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace nodempi::transport {

constexpr uint64_t kMagic = 0x69706d65646f6e31ull;  // "1nodempi"
constexpr uint32_t kVersion = 7;  // 7: a ring of header lines per context member
constexpr uint32_t kMaxRanks = 256;
constexpr uint32_t kContexts = 4096;  // COMM_WORLD is context 0; the rest are a pool
constexpr uint32_t kSets = kContexts;  // slot sets per rank
constexpr size_t kCacheLine = 64;
// Each member of a context writes the header of phase s (its signature, a
// small message; coll/context.h) into line s mod kHeaderLines of its own
// ring, so a rank that writes nothing else in a phase may run that many
// phases, less one, ahead of its readers (coll/bcast.cc).
constexpr uint32_t kHeaderLines = 16;

// One rank's published state in one communicator context. `seq` is the last
// phase this rank has posted; peers spin or futex-wait on it. `waiters` lives
// on the same line so the poster learns with one read whether to wake
// anyone; `set` (which of its slot sets the rank writes this context's data
// into, valid from the first phase it posts after changing it) too, so a
// reader gets it with the post. `done` is the last phase of the last
// collective this rank has finished here: it reads none of the data of
// phases up to it any more. Only a rank looking for a slot set reads it, so
// it sits on the second cache line, where writing it at the end of every
// collective does not take the first line from peers polling `seq`. Two
// cache lines also keep the adjacent-line prefetcher from coupling two
// ranks' lines.
struct alignas(kCacheLine) CtrlLine {
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> waiters;
  std::atomic<uint32_t> set;
  char pad[kCacheLine - 3 * sizeof(std::atomic<uint32_t>)];
  alignas(kCacheLine) std::atomic<uint32_t> done;
  char pad2[kCacheLine - sizeof(std::atomic<uint32_t>)];
};
static_assert(sizeof(CtrlLine) == 2 * kCacheLine, "CtrlLine must be two cache lines");

struct RankInfo {
  std::atomic<int32_t> pid;      // written by the rank when it attaches
  std::atomic<int32_t> exited;   // set by the launcher when it reaps the rank: 1 + code, or -signal
  std::atomic<uint32_t> claimed;  // 1 once a process (or thread) has attached as this rank
  // Set by the rank as it lets go of the job (finalize, exit) with an
  // operation still unfinished: whoever waits for it, or that operation
  // itself, stops with ERR_PROC_FAILED.
  std::atomic<uint32_t> leaving;
};

// Allocation state of one communicator context: which are taken, how many
// members have yet to free it (the last one returns it to the pool), and
// how many times it has been taken (a set still bound to an earlier use
// of the context is free once this has moved on).
struct ContextSlot {
  std::atomic<uint32_t> in_use;
  std::atomic<uint32_t> members_left;
  std::atomic<uint32_t> generation;
};

// A one-message outbox per world rank, used only when two groups' leaders
// meet to create an intercommunicator (MPI has them talk through a peer
// communicator; collectives alone cannot do it). Only the owner writes it,
// and only while it is empty; only the addressee empties it. An outbox
// rather than an inbox, so a message to a busy leader never blocks a third
// rank's message to the same leader (creations with other tags may run
// concurrently, in any order). `label` says whom the message is for and
// with which tag, in the one word the owner publishes last: a leader that
// polls an outbox holding someone else's message reads nothing else of it,
// so the owner may rewrite the rest as soon as that one has emptied it.
struct Outbox {
  std::atomic<uint64_t> label;  // 0 empty; else outbox_label(to, tag)
  uint32_t count;
  int32_t data[kMaxRanks + 4];
};
inline uint64_t outbox_label(uint32_t to, uint32_t tag) { return uint64_t(tag) << 32 | uint64_t(to) << 1 | 1; }

struct alignas(kCacheLine) Header {
  uint64_t magic;
  uint32_t version;
  uint32_t nranks;
  uint32_t contexts;
  uint32_t launcher_pid;
  uint64_t half_bytes;   // size of one slot half
  uint64_t total_bytes;  // whole mapping, checked against fstat on attach
  // Job-wide failure: set by the launcher when a rank fails, or by abort().
  alignas(kCacheLine) std::atomic<uint32_t> failed;
  std::atomic<int32_t> failed_rank;
  std::atomic<uint32_t> attached;
  alignas(kCacheLine) RankInfo ranks[kMaxRanks];
  alignas(kCacheLine) ContextSlot contexts_state[kContexts];
  alignas(kCacheLine) Outbox outboxes[kMaxRanks];
};

// Point-to-point (core/p2p): what a rank's senders ring after writing into
// one of its rings. `seq` only ever grows. A waiting thread watches the
// heads of its rings, and `seq` for news that is no record (room made in a
// ring it writes to). `sleepers` counts the threads asleep on `seq` that
// want to be woken; a sender moves `seq` for a record, and pays a futex
// wake, only when one is: a receiver that spins or yields costs its senders
// no system call, and no transfer of this line. `urgent` is where the
// rank's progress thread sleeps while it has no nonblocking request in
// flight: only a sender that finds a ring full (or the rank itself, with
// new work) moves it and wakes the thread, so ordinary messages never wake
// an idle thread. Two cache lines, so the adjacent-line prefetcher does
// not couple two ranks' doorbells.
struct alignas(kCacheLine) Doorbell {
  std::atomic<uint32_t> seq;
  std::atomic<uint32_t> sleepers;
  std::atomic<uint32_t> urgent;
  char pad[2 * kCacheLine - 3 * sizeof(std::atomic<uint32_t>)];
};
static_assert(sizeof(Doorbell) == 2 * kCacheLine, "Doorbell must be two cache lines");

// Bytes of data in one point-to-point ring (a power of two).
constexpr size_t kRingBytes = 64 * 1024;

// A single-producer single-consumer byte ring from one world rank to
// another. `head` and `tail` count bytes since the job began (never
// wrapped; the offset into `data` is the count modulo kRingBytes). Only
// the sender writes `head`, only the receiver `tail`: each on its own line,
// so neither's writes take the other's line away. `stuck` is set by a
// sender that found no room and waits for some; the receiver, after it has
// made room, rings the sender's doorbell when it is set. Its own line too:
// the sender writes it only on that slow path, the receiver reads it after
// every drain.
struct alignas(kCacheLine) Ring {
  std::atomic<uint64_t> head;
  char pad0[kCacheLine - sizeof(std::atomic<uint64_t>)];
  alignas(kCacheLine) std::atomic<uint64_t> tail;
  char pad1[kCacheLine - sizeof(std::atomic<uint64_t>)];
  alignas(kCacheLine) std::atomic<uint32_t> stuck;
  char pad2[2 * kCacheLine - sizeof(std::atomic<uint32_t>)];
  alignas(kCacheLine) uint8_t data[kRingBytes];
};

// Sizes for a job of `nranks` ranks.
struct Geometry {
  uint32_t nranks;
  size_t half_bytes;
  size_t ctrl_offset;
  size_t headers_offset;
  size_t slots_offset;
  size_t doorbells_offset;
  size_t rings_offset;
  size_t ring_stride;  // a Ring rounded up to whole pages
  size_t total_bytes;
  static Geometry for_ranks(uint32_t nranks);
};

class SlotSets;

// A mapping of the segment, owned by the launcher or by a rank.
class Segment {
 public:
  // Launcher: create a new segment (an anonymous memfd, mode 0600), size
  // and initialise it. The ranks inherit a duplicate of fd(); close_fd()
  // drops the original.
  static Segment* create(uint32_t nranks, std::string* error);
  // Rank: map the inherited fd, check the header against what the launcher
  // told us through the environment, and claim the rank: a second process
  // (or thread) that inherited the same descriptor and environment is
  // refused, so no rank ever runs twice.
  static Segment* attach(int fd, uint32_t rank, uint32_t nranks, std::string* error);
  ~Segment();

  Header* header() const { return header_; }
  const Geometry& geometry() const { return geo_; }
  int fd() const { return fd_; }
  // The memfd's name, "nodempi-" and 32 random hex digits: a job's segment
  // is recognisable in /proc/PID/maps.
  const std::string& name() const { return name_; }
  void close_fd();

  // The control line of `member` (its rank in the communicator) of `context`.
  CtrlLine* ctrl(uint32_t context, uint32_t member) const;
  // The kHeaderLines header lines of `member` of `context`.
  uint8_t* headers(uint32_t context, uint32_t member) const;
  // Takes a free context for a new communicator of `members` ranks and
  // resets its control lines; -1 when the pool is exhausted.
  int alloc_context(uint32_t members);
  // One member is done with `context`; the last one returns it to the pool.
  void release_context(uint32_t context);
  // Half `half` of slot set `set` of world rank `rank`.
  uint8_t* slot(uint32_t rank, uint32_t set, uint32_t half) const;
  // The doorbell of world rank `rank`, and the ring from `src` to `dst`.
  Doorbell* doorbell(uint32_t rank) const;
  Ring* ring(uint32_t src, uint32_t dst) const;
  // This rank's slot sets (null in the launcher's mapping).
  SlotSets* sets() const { return sets_.get(); }
  uint32_t rank() const { return rank_; }

 private:
  Segment();
  Header* header_ = nullptr;
  void* base_ = nullptr;
  Geometry geo_{};
  int fd_ = -1;
  uint32_t rank_ = 0;
  std::string name_;
  std::unique_ptr<SlotSets> sets_;
};

}  // namespace nodempi::transport
