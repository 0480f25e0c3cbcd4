// Point-to-point messages (MPI send/recv semantics) for one rank, over the
// segment's rings, without Node.
//
// Every ordered pair of world ranks has a byte ring (transport::Ring). A
// message travels through the sender's ring to the receiver as records:
//   EAGER  the whole message, when it fits one record (kMaxPayload bytes);
//   FRAG   the first chunk of a longer one, carrying its full length;
//   CONT   the chunks that follow it, in order, right behind it;
//   RTS    a long message by single copy: the sender's buffer address and
//          pid, from which the receiver copies it (transport::cma_read)
//          once it is matched, or into the heap if it is unexpected;
//   FIN    the receiver's answer to an RTS (the other way): copied, or
//          refused, and then the sender streams it as CONT records.
// A sender never interleaves two messages in one ring: sends to one
// destination leave in the order they were made, and one waiting for room
// (or for its FIN) holds back those after it. So a receiver needs no more
// reassembly state than "the message this ring is in the middle of". A FIN
// is not a message: it goes between two messages, even past a send that
// waits for its own FIN, so two ranks' RTS to each other never deadlock.
//
// The receiver drains every ring into matching (progress): a record that
// starts a message goes to the first posted receive that matches it, in the
// order receives were posted; with none, it waits in the unexpected queue
// (payload on the heap, arrival order), which a new receive searches first.
// Rings are FIFO and both queues keep their order, so messages of one
// (sender, communicator, tag) never overtake. Draining never waits for the
// application, so buffering is unbounded, and a sender that finds a ring
// full wakes the receiver's progress thread, which drains it even while the
// receiver runs JavaScript.
//
// Threads: one mutex guards all of it. Whoever is blocked in a call (the
// main thread in a blocking call or a wait, the progress thread for
// nonblocking requests) runs progress itself, so two ranks that both send a
// lot before they receive drain each other's rings and never deadlock.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/progress/lane.h"
#include "core/transport/segment.h"
#include "core/transport/wait.h"

namespace nodempi::p2p {

constexpr int32_t kAnySource = -1;
constexpr int32_t kAnyTag = -1;

// Largest payload of one record: a quarter of a ring, so a long message
// keeps several chunks in flight while the receiver copies out.
constexpr size_t kMaxPayload = transport::kRingBytes / 4;

// What a receive or probe matches: the communicator's key (its context and
// that context's generation, so a context freed and taken again never
// matches stale messages), the sender's rank in its own group or
// kAnySource, and the tag or kAnyTag.
struct Match {
  uint64_t key;
  int32_t source;
  int32_t tag;
};

// What MPI's status says of a matched message. `handle`: mprobe's handle
// for mrecv, 0 otherwise.
struct Status {
  int32_t source = -1;
  int32_t tag = -1;
  uint64_t bytes = 0;
  uint64_t handle = 0;
};

// The world ranks whose failure ends a wait: the source of a receive, or
// every rank that could send to an ANY_SOURCE receive (which fails only
// when all of them have gone, or the job has failed).
struct Watch {
  const uint32_t* ranks = nullptr;
  uint32_t count = 0;
};

// Where a nonblocking call reports: `status` (4 doubles: source, tag,
// bytes, handle; may be null) is written before `op` is marked done.
struct Report {
  double* status = nullptr;
  std::shared_ptr<progress::Op> op;
};

struct Record;  // a record's header in a ring (p2p.cc)

class P2P {
 public:
  // The rank `self` (its world rank) of the job mapped by `seg`.
  P2P(transport::Segment* seg, uint32_t self);
  // Stops the progress thread. Nonblocking requests still in flight are
  // dropped without being completed.
  ~P2P();
  P2P(const P2P&) = delete;
  P2P& operator=(const P2P&) = delete;

  // Receives every completed nonblocking request's op (any thread, under
  // the lock): the binding marks it done in the progress engine.
  void set_sink(std::function<void(const std::shared_ptr<progress::Op>&)> sink);
  // The progress thread: drains the rings while this rank is elsewhere
  // (JavaScript). It sleeps on the doorbell; once woken (kick(), a send
  // queued behind a full ring, or a sender that finds a ring full or asks
  // for a single copy) it asks senders to wake it while nonblocking
  // requests are in flight.
  void start_thread();
  void stop_thread();
  // Wakes the progress thread if nonblocking requests are in flight (lib
  // calls it once per JavaScript turn that made requests): a receive or
  // matched probe posted does not wake it by itself. A send queued behind
  // a full ring does, at once: its receiver may be blocked on it while this
  // rank waits in another call.
  void kick();
  // A communicator with messages keyed `key` has been freed here: its
  // unexpected messages can never be received. Those here go, one still
  // arriving is skipped, and one that arrives later is dropped as it comes
  // (its sender is not held up).
  void forget(uint64_t key);

  // Blocking calls. `source` in a send is this rank's rank in its group
  // (what the receiver matches and reports); `dst` the destination's world
  // rank. A send returns once the message is in the ring (a long one: its
  // last chunk). recv fills `st` and throws CoreError(TRUNCATE) when the
  // message is longer than `cap` (the first `cap` bytes are written).
  // Every wait throws CoreError(PROC_FAILED) when the peers it depends on
  // have gone.
  void send(uint64_t key, int32_t source, int32_t tag, uint32_t dst, const void* buf, size_t bytes);
  void recv(const Match& m, void* buf, size_t cap, const Watch& w, Status& st);
  Status probe(const Match& m, const Watch& w);
  bool iprobe(const Match& m, Status& st);
  // Takes the message out of matching; st.handle names it for mrecv.
  Status mprobe(const Match& m, const Watch& w);
  // The message of an mprobe/improbe handle, once; CoreError(REQUEST) for
  // a handle that is unknown or was received already.
  void mrecv(uint64_t handle, void* buf, size_t cap, Status& st);

  // Nonblocking calls: `r.op` completes through the sink (at once, inside
  // the call, when nothing is left to wait for). The buffers must stay
  // valid until then.
  void isend(uint64_t key, int32_t source, int32_t tag, uint32_t dst, const void* buf, size_t bytes, Report r);
  void irecv(const Match& m, void* buf, size_t cap, const Watch& w, Report r);
  void improbe(const Match& m, const Watch& w, Report r);

  // For the progress engine's hook: one round of progress (op null), or
  // progress and a short wait for `op`, `since_ns` being when its waiter
  // began (spin first, then yield, then sleep on the doorbell).
  void drive(const progress::Op* op, uint64_t since_ns);

  // Nonblocking requests in flight (tests).
  size_t in_flight();

 private:
  struct Recv;
  struct Msg;
  struct Send;
  // The message a ring is in the middle of: its bytes go to `recv`'s buffer
  // (matched), or to `msg`'s heap copy (unexpected or mprobed), or nowhere
  // (its receive failed).
  struct Assembly {
    bool active = false;
    uint64_t total = 0;
    uint64_t got = 0;
    Recv* recv = nullptr;
    Msg* msg = nullptr;
  };
  struct Out {  // this rank's end of the ring to one destination
    uint64_t head = 0;
    uint64_t tail_seen = 0;
    bool stuck = false;
    uint64_t stuck_since = 0;
    std::deque<Send*> queue;  // sends waiting for room, in order
    std::deque<Record*> control;  // FINs to write at the next message boundary
  };

  // All below: with mu_ held.
  void progress();
  bool drain(uint32_t src);
  void take(uint32_t src, const Record& rec, uint64_t pos);
  void copy_out(uint32_t src, uint64_t pos, uint8_t* to, size_t n);
  bool push(Send& s);
  // Writes one record (header and payload) into the ring to `dst` if there
  // is room; else marks the ring stuck (force: wake the receiver's thread).
  bool put(uint32_t dst, const Record& rec, const void* payload, size_t n, bool& force);
  bool single_copy(size_t bytes) const;
  void answer(uint32_t src, uint64_t cookie, bool copied);
  void finished_rts(uint32_t src, uint64_t cookie, bool copied);
  void push_queued();
  // What a ring of `rank`'s doorbell tells it: records this rank wrote
  // into its ring from position `from` on; the same (or none) and its
  // progress thread must run (the ring is full, or an RTS waits for a
  // copy); or room made in a ring it writes to.
  enum class Bell { kRecords, kUrgent, kRoom };
  // Wakes `rank`'s sleepers, if any, for that news (and, kUrgent, its
  // thread). seq moves only for sleepers, or always for room made, which
  // is not a record in a ring: a rank that spins watches its rings
  // (pending()) and seq.
  void ring_bell(uint32_t rank, Bell news, uint64_t from);
  // Whether a ring into this rank holds records not drained yet (any
  // thread, without mu_).
  bool pending() const;
  Recv* match_posted(uint64_t key, int32_t source, int32_t tag);
  // Whether `key` names a communicator forget() was told of.
  bool dead(uint64_t key) const;
  std::list<std::unique_ptr<Msg>>::iterator find_unexpected(const Match& m);
  // A matched probe takes message `m` to probed_: its status, carrying the
  // handle mrecv takes it by.
  Status claim(std::unique_ptr<Msg> m);
  // A nonblocking receive or matched probe, with its own copy of the watched
  // ranks (the caller's list goes when the call returns).
  static std::unique_ptr<Recv> nonblocking(const Match& m, const Watch& w, Report rep);
  bool bind(std::unique_ptr<Msg> m, Recv* r);
  void finish(Recv* r);
  void post(Recv* r);
  void unpost(Recv* r);
  void abandon(Recv* r);
  void complete_send(Send* s, ErrorClass e, const std::string& message);
  void check_nonblocking();
  std::string failure(const Watch& w) const;
  void wake_thread();
  // Blocks until done() (with mu_ held), running progress; on a failure of
  // the watched ranks runs cleanup() and throws PROC_FAILED.
  template <class Done, class Cleanup>
  void block(std::unique_lock<std::mutex>& lk, Done done, const Watch& w, const char* what, Cleanup cleanup);
  // Waits (without mu_) for the doorbell to move past `seen`: spins, yields
  // or sleeps by the time since `since_ns` (0: the wait begins now, and
  // pause() sets it); sleeps at most `max_sleep_ns`. True after a sleep
  // (time to look at liveness).
  bool pause(uint32_t seen, uint64_t& since_ns, long max_sleep_ns);
  void thread_main();

  transport::Segment* seg_;
  const uint32_t self_;
  const uint32_t nranks_;
  transport::Doorbell* bell_;
  transport::WaitPolicy policy_;
  transport::Liveness live_;
  const int32_t pid_;
  const bool rts_;          // single copy is allowed in this job
  const bool rts_refused_;  // NODEMPI_CMA=fallback: every copy refused
  const size_t rts_min_;

  std::mutex mu_;
  std::vector<Out> out_;              // by destination world rank
  std::vector<transport::Ring*> in_rings_;  // into this rank, by source (pending() polls them)
  std::vector<uint64_t> in_tail_;     // by source world rank
  std::vector<Assembly> assembly_;    // by source world rank
  Recv* posted_head_ = nullptr;       // posted receives, in post order
  Recv* posted_tail_ = nullptr;
  std::list<std::unique_ptr<Msg>> unexpected_;  // arrival order
  std::unordered_map<uint64_t, std::unique_ptr<Msg>> probed_;  // by handle
  // By context id, the latest generation of it freed here: a context is
  // taken again only once every member has freed it, with a higher
  // generation, so a key of that generation or an older one is dead.
  std::unordered_map<uint32_t, uint32_t> freed_;
  uint64_t next_handle_ = 1;
  std::list<std::unique_ptr<Recv>> nb_recvs_;  // nonblocking receives in flight
  std::list<std::unique_ptr<Send>> nb_sends_;  // nonblocking sends in flight
  std::function<void(const std::shared_ptr<progress::Op>&)> sink_;

  size_t queued_ = 0;  // sends and FINs waiting in out_[*]
  uint64_t next_cookie_ = 1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  bool thread_listening_ = false;  // the thread counts in the doorbell's sleepers (mu_)
  bool thread_called_ = false;     // woken by wake_thread() and not yet run since (mu_)
};

}  // namespace nodempi::p2p
