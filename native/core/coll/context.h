// A communicator's view of the segment and the phase protocol every
// collective is built from.
//
// A collective is a fixed sequence of phases, the same on every rank (it
// depends only on arguments MPI requires to match). In phase s a rank may
// fill its own slot half (s & 1), then posts s on its control line; peers
// wait for that post and read the slot. A rank reads phase-s data only
// before it posts s+1, so a writer may reuse half (s & 1) for phase s+2 once
// every peer has posted s+1 (acquire_slot). Messages larger than a half are
// cut into chunks, one phase each, which pipelines them: the writer fills
// one half while readers drain the other. Each phase also has a header line
// per rank, from a ring of transport::kHeaderLines, read under the same rule
// and so free again kHeaderLines - 1 phases later.
//
// The first phase of every collective carries each rank's signature (what
// it called, with which root, op, datatype and size) and every rank waits
// for every other's before any data moves: all ranks see the same set of
// signatures and so take the same decision, and a disagreement throws
// ERR_NOT_SAME on all of them after exactly one phase, which leaves the
// communicator usable. (One exception, by request: with
// NODEMPI_CHECK_SAME=0 the root of a small bcast or scatter waits for
// nobody, and in those and a small gather the others compare with the root
// alone; coll/bcast.cc.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/coll/select.h"
#include "core/transport/publish.h"
#include "core/transport/segment.h"
#include "core/transport/slot_sets.h"
#include "core/transport/wait.h"

namespace nodempi::coll {

// What a rank says it is doing in a collective. Zero fields are "not
// compared" where MPI lets ranks differ (v-variants' counts, ops of
// non-reductions).
struct Signature {
  uint32_t kind = 0;     // Kind below
  uint32_t root = 0;     // rooted collectives; kNoRoot: "not known here"
  int32_t op = -2;       // reductions: predefined op id, -1 user op; -2 none; kAnyOp not compared
  uint32_t type = 0;     // reductions: kernel type id + 1; 0 not compared
  uint64_t bytes = 0;    // bytes per rank where MPI requires them equal
  uint16_t check_bytes = 0;
  uint16_t algo = 0;     // the Algo chosen (coll/select.h); 0 not compared
  uint32_t direct = 0;   // single-copy path (coll/direct.h): bit 1 compared, bits 0 and 2 not
};
static_assert(sizeof(Signature) == 32, "the signature fits its slot header");
static_assert(std::has_unique_object_representations_v<Signature>, "no padding: agree() compares signatures as bytes");

// Passed as the root by intercommunicator members that neither send nor
// receive (MPI_PROC_NULL) and so need not know where the root is.
constexpr uint32_t kNoRoot = 0xffffffffu;
// Passed as the op by intercommunicator members that take no part in a
// reduction (MPI_PROC_NULL), whose op MPI does not look at.
constexpr int32_t kAnyOp = -3;

enum Kind : uint32_t {
  BARRIER = 1, BCAST, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV,
  REDUCE, ALLREDUCE, REDUCE_SCATTER, SCAN, EXSCAN
};
const char* kind_name(uint32_t kind);

// What a member says about one phase, besides the data in its slot half.
// It lives in the member's ring of header lines for the context
// (transport::kHeaderLines), not in the half, so a phase whose message fits
// here (a small bcast's) writes no half at all.
struct SlotHeader {
  uint64_t phases;  // v-collectives: how many phases the writer needs
  uint64_t bytes;   // what the writer sends, for truncation checks
  Signature sig;    // first phase of a collective
  uint64_t addr[2];  // single-copy path: buffer addresses, then the copy status
};
static_assert(sizeof(SlotHeader) == transport::kCacheLine, "one cache line per header");
// The first bytes of each slot half, which carried its header before the
// header lines did; the data still starts after them, so chunk sizes (and
// the tests that straddle them) stay as they were.
constexpr size_t kHeaderBytes = 64;

// The job and the environment as the selection table (select.h) and the
// single-copy path (direct.h) read them, taken when the context is made:
// neither changes while it lives (tuning() is read once per process, and
// tests that retune make new jobs), and gathering them at every collective
// cost a dozen out-of-line calls (bench/VCOLL.md, "The selection read once").
struct Settings {
  bool single_copy = false;  // more than one member, and transport::cma_mode() is not OFF
  bool copies = false;       // and it is ON or REFUSE: this rank copies directly
  bool check_same = true;    // NODEMPI_CHECK_SAME
  size_t cma_min = 0;        // NODEMPI_CMA_MIN
  ForcedAlgos forced;        // NODEMPI_ALGO
};

class Context {
 public:
  // A communicator of `size` ranks using segment context `id`; member i is
  // world rank world_ranks[i]. A size-1 context needs no segment.
  Context(transport::Segment* seg, uint32_t id, uint32_t rank, std::vector<uint32_t> world_ranks);

  uint32_t id() const { return id_; }
  transport::Segment* segment() const { return seg_; }
  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }
  // Data bytes in one slot half (after its header).
  size_t half_bytes() const { return half_; }

  // The phase the next post will publish.
  uint32_t next_phase() const { return seq_ + 1; }
  // First phase of a collective: waits until this rank's half is free and
  // writes `sig` into its header. The caller fills its data, posts, then
  // calls agree(). `header_only`: the collective writes no slot half (all it
  // sends fits the header), so it waits only until every peer has read the
  // header line it reuses, kHeaderLines - 1 phases back: a bcast root may
  // run that many collectives ahead of its readers (coll/bcast.cc).
  uint32_t open(const Signature& sig, const char* what, bool header_only = false);
  // Waits for every peer's first phase and compares signatures; throws
  // CoreError(NOT_SAME) on every rank alike when they differ. With a
  // member `with`, waits for that one only and compares with it alone (a
  // bcast whose root does not wait for its readers: coll/bcast.cc).
  static constexpr uint32_t kEveryone = UINT32_MAX;
  void agree(uint32_t s, const char* what, uint32_t with = kEveryone);
  // The same waits; says whether the signatures are the same, never throws
  // NOT_SAME (a later agree() on the same phase reports what differs).
  bool matches(uint32_t s, const char* what, uint32_t with = kEveryone);
  // Wait until every peer has posted s-1, so this rank may overwrite its
  // slot half for phase s.
  void acquire_slot(uint32_t s, const char* what);
  void post(uint32_t s);
  // `touch`: a line of the peer's to keep reading meanwhile
  // (transport::wait_for), or null.
  void wait(uint32_t peer, uint32_t s, const char* what, const void* touch = nullptr);
  void wait_all(uint32_t s, const char* what);

  // One collective starts and ends on this rank (Round below). Nested
  // pairs count once.
  void begin();
  void end();

  // World rank of a member, and the generation of the context's current
  // use (point-to-point keys its messages with both id and generation).
  uint32_t world_rank(uint32_t member) const { return world_ranks_[member]; }
  const uint32_t* world_ranks() const { return world_ranks_.data(); }
  uint32_t generation() const { return owner_.generation; }
  // This process's number for this communicator, never given to another
  // (point-to-point keys the messages of a one-rank communicator, which has
  // no shared context, with it).
  uint64_t serial() const { return serial_; }

  // Process id of a member, for single-copy transfers.
  int32_t pid(uint32_t member) const;
  // Set on every rank alike once a single-copy transfer has failed on any:
  // from then on this communicator only uses its slots.
  bool direct_off() const { return direct_off_; }
  void set_direct_off() { direct_off_ = true; }

  // Member's data for phase s: valid once this rank has waited for that
  // member's post of phase s. This rank's own slot half is its slot set's
  // for the context, which the first asking in a collective binds (bind()):
  // a collective that writes no slot half on this rank (a barrier, a
  // message in the header line) holds no set.
  uint8_t* slot(uint32_t member, uint32_t s) {
    if (member == rank_ && !bound_) bind();
    return slots_[member * 2 + (s & 1)] + kHeaderBytes;
  }
  // Binds this rank's slot set now (slot() would at its first write), for
  // a collective that writes its half in its first phase whatever happens:
  // called before open(), hold()'s locked instruction does not wait for
  // the header line's stores to leave, which a peer waiting on that line
  // delays (bench/VCOLL.md, "Binding the slots first").
  void hold_slot() {
    if (!bound_) bind();
  }
  // Member's header line for phase s, written and read under the same rules
  // as the data: its signature, how many phases a v-collective takes, and so
  // on.
  SlotHeader* header(uint32_t member, uint32_t s) const {
    return reinterpret_cast<SlotHeader*>(headers_[member]) + s % transport::kHeaderLines;
  }
  // Copies `n` bytes into this rank's slot half for its peers to read
  // (transport::publish: past the cache from 16 KiB up, unless ranks
  // outnumber cores); returns whether it went past it.
  bool publish(void* dst, const void* src, size_t n) const { return transport::publish(dst, src, n, !crowded_); }
  // Whether the job has more ranks than online CPUs (transport::oversubscribed):
  // then no copy streams (Layout::publish takes !crowded()).
  bool crowded() const { return crowded_; }
  const Settings& settings() const { return settings_; }
  // Member's data for phase s of a collective where each member sends
  // `bytes` (the same on every rank; agree() compares them before anyone
  // reads): in the phase open() returned, a message of up to 16 bytes
  // travels in the header's addr[], on the signature's line, which agree()
  // brings in with the post; otherwise the slot. (A single-copy attempt
  // uses addr[] in its own opened phase and never calls this there; its
  // fallback runs in later phases.) Like slot(), valid for a peer once its
  // post of s has been seen.
  uint8_t* data(uint32_t member, uint32_t s, size_t bytes) {
    return s == opened_ && bytes <= sizeof(SlotHeader::addr) ? reinterpret_cast<uint8_t*>(header(member, s)->addr)
                                                              : slot(member, s);
  }

 private:
  // Holds this rank's slot set for the context until the collective ends,
  // and points its slots there. A set it moves to is published by the next
  // post, which comes after the data written into it.
  void bind();
  // After a wait for `peer`: points its slots at the set it now writes
  // into. A rank moves to another set only when every member has read all
  // it wrote in the old one, so the set seen with a post is the one that
  // post's data is in.
  void see(uint32_t peer);
  void point(uint32_t member, uint32_t set);
  // Whether member r's signature takes part in agree(…, with).
  bool compared(uint32_t r, uint32_t with) const { return with == kEveryone || r == with || r == rank_; }

  transport::Segment* seg_;
  uint32_t id_;
  uint32_t rank_;
  uint32_t size_;
  size_t half_;
  uint32_t seq_ = 0;
  uint32_t opened_ = 0;  // the phase the last open() returned
  bool direct_off_ = false;
  std::vector<uint32_t> world_ranks_;
  uint64_t serial_;
  std::vector<transport::CtrlLine*> lines_;
  std::vector<uint8_t*> slots_;
  std::vector<uint8_t*> headers_;
  // The last phase seen posted by each member: a wait for one already seen
  // reads nothing, so a reader whose root runs ahead (or a root whose
  // readers are far enough along) does not fetch the peer's line each call.
  std::vector<uint32_t> seen_;
  std::vector<uint32_t> sets_;  // the set each member's slots_ point into
  transport::SlotSets::Owner owner_{};
  uint32_t depth_ = 0;  // nested begin()s
  bool bound_ = false;  // this rank's slot set is held (bind())
  bool crowded_ = false;  // ranks outnumber cores: publish() does not stream
  transport::WaitPolicy policy_{};
  transport::Liveness live_;
  Settings settings_;
};

// One collective on a context, from before its first phase to its end.
// A slot set this rank writes into meanwhile stays bound to the context
// (Context::slot); at the end the rank publishes that it reads nothing more
// of what was posted so far (CtrlLine::done), which lets each member's set
// go to another context once all have done so.
class Round {
 public:
  explicit Round(Context& c) : c_(c) { c_.begin(); }
  ~Round() { c_.end(); }
  Round(const Round&) = delete;
  Round& operator=(const Round&) = delete;

 private:
  Context& c_;
};

}  // namespace nodempi::coll
