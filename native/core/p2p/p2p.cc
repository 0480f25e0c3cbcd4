#include "core/p2p/p2p.h"

#include "core/transport/cma.h"
#include "core/transport/wait.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace nodempi::p2p {

// A record's header; its payload follows, and the next record starts at the
// next multiple of 8 bytes.
struct Record {
  uint32_t kind;
  int32_t source;   // the sender's rank in its group
  uint64_t key;     // the communicator (Match::key)
  int32_t tag;
  uint32_t payload; // bytes of payload in this record
  uint64_t total;   // bytes of the whole message
};
static_assert(sizeof(Record) == 32, "a record header is 32 bytes");

namespace {

using transport::futex_wait;
using transport::futex_wake_all;

enum Kind : uint32_t { EAGER = 1, FRAG = 2, CONT = 3, RTS = 4, FIN = 5 };

// The payload of an RTS. A FIN has none: its `key` is the cookie and its
// `tag` 1 when the message was copied, 0 when the copy was refused.
struct RtsBody {
  uint64_t addr;
  uint64_t cookie;
  int32_t pid;
  uint32_t pad;
};

constexpr size_t kMask = transport::kRingBytes - 1;
static_assert((transport::kRingBytes & kMask) == 0, "the ring size is a power of two");

// A sleeping waiter looks at its peers' liveness this often.
constexpr long kSliceNs = 20 * 1000 * 1000;
// A sender still stuck on a full ring wakes the receiver's thread again
// this often, in case the first wake-up came just before that thread slept.
constexpr uint64_t kRewakeNs = 10 * 1000 * 1000;

size_t record_bytes(size_t payload) { return (sizeof(Record) + payload + 7) & ~size_t(7); }

void copy_in(transport::Ring* ring, uint64_t pos, const void* from, size_t n) {
  if (n == 0) return;  // `from` may be null then
  size_t off = pos & kMask, first = std::min(n, transport::kRingBytes - off);
  std::memcpy(ring->data + off, from, first);
  if (n > first) std::memcpy(ring->data, static_cast<const uint8_t*>(from) + first, n - first);
}

bool matches(const Match& m, uint64_t key, int32_t source, int32_t tag) {
  return m.key == key && (m.source == kAnySource || m.source == source) && (m.tag == kAnyTag || m.tag == tag);
}

}  // namespace

struct P2P::Recv {
  Match m{};
  uint8_t* buf = nullptr;
  size_t cap = 0;
  const char* what = "recv";
  bool probe = false;  // improbe: the message goes to probed_, not to buf
  Watch watch;
  std::vector<uint32_t> watch_copy;  // nonblocking: what `watch` points into
  bool nonblocking = false;
  Report report;
  std::list<std::unique_ptr<Recv>>::iterator self;  // nonblocking: in nb_recvs_
  // Matched:
  Status st;
  uint64_t total = 0;
  bool done = false;
  ErrorClass error = ErrorClass::SUCCESS;
  std::string message;
  // Posted:
  bool posted = false;
  Recv* prev = nullptr;
  Recv* next = nullptr;
};

struct P2P::Msg {
  uint64_t key;
  int32_t source;
  int32_t tag;
  uint32_t from;  // the sender's world rank (its ring)
  uint64_t total;
  uint64_t got;
  // Not value-initialised (a vector would zero it first): every byte is
  // written before it is read.
  std::unique_ptr<uint8_t[]> data;
};

struct P2P::Send {
  Send(uint64_t key, int32_t source, int32_t tag, uint32_t dst, const void* buf, uint64_t total)
      : key(key), source(source), tag(tag), dst(dst), buf(static_cast<const uint8_t*>(buf)), total(total) {}
  uint64_t key;
  int32_t source;
  int32_t tag;
  uint32_t dst;
  const uint8_t* buf;
  uint64_t total;
  uint64_t sent = 0;
  bool started = false;
  bool awaiting = false;  // its RTS is out; its FIN has not come
  // A blocking send's RTS went out at this time without waking the
  // receiver's thread (0: woken, or no RTS): send() wakes it if no FIN has
  // come within the spin time.
  uint64_t rts_ns = 0;
  uint64_t cookie = 0;
  bool done = false;
  bool nonblocking = false;
  Report report;
  std::list<std::unique_ptr<Send>>::iterator self;  // nonblocking: in nb_sends_
};

P2P::P2P(transport::Segment* seg, uint32_t self)
    : seg_(seg),
      self_(self),
      nranks_(seg->geometry().nranks),
      bell_(seg->doorbell(self)),
      policy_(transport::WaitPolicy::for_job(seg->geometry().nranks)),
      live_(seg->header(), self),
      pid_(int32_t(getpid())),
      rts_(transport::cma_mode(seg->geometry().nranks) != transport::CmaMode::OFF),
      rts_refused_(transport::cma_mode(seg->geometry().nranks) == transport::CmaMode::FALLBACK),
      rts_min_(std::max(transport::cma_min_bytes(), kMaxPayload + 1)),
      out_(nranks_),
      in_rings_(nranks_),
      in_tail_(nranks_),
      assembly_(nranks_) {
  // Rings are never reset: a rank continues from what its peers posted
  // (nothing, in a new job; the segment starts zeroed).
  for (uint32_t r = 0; r < nranks_; ++r) {
    in_rings_[r] = seg_->ring(r, self_);
    in_tail_[r] = in_rings_[r]->tail.load(std::memory_order_acquire);
    out_[r].head = seg_->ring(self_, r)->head.load(std::memory_order_acquire);
    out_[r].tail_seen = seg_->ring(self_, r)->tail.load(std::memory_order_acquire);
  }
}

P2P::~P2P() {
  stop_thread();
  for (Out& o : out_) {
    for (Record* r : o.control) delete r;
  }
}

void P2P::set_sink(std::function<void(const std::shared_ptr<progress::Op>&)> sink) {
  std::lock_guard<std::mutex> lk(mu_);
  sink_ = std::move(sink);
}

void P2P::start_thread() {
  if (thread_.joinable()) return;
  stop_.store(false, std::memory_order_release);
  thread_ = std::thread([this] { thread_main(); });
}

void P2P::stop_thread() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  bell_->urgent.fetch_add(1, std::memory_order_acq_rel);
  bell_->seq.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(&bell_->urgent);
  futex_wake_all(&bell_->seq);
  thread_.join();
}

size_t P2P::in_flight() {
  std::lock_guard<std::mutex> lk(mu_);
  return nb_recvs_.size() + nb_sends_.size();
}

// ---- Rings ------------------------------------------------------------------

void P2P::ring_bell(uint32_t rank, Bell news, uint64_t from) {
  transport::Doorbell* b = seg_->doorbell(rank);
  if (news == Bell::kRoom) b->seq.fetch_add(1, std::memory_order_release);
  if (news == Bell::kUrgent) {
    b->urgent.fetch_add(1, std::memory_order_release);
    futex_wake_all(&b->urgent);
  }
  // Pairs with a sleeper's increment and re-check (pause()): either it sees
  // the new ring head (or seq), or this sees it counted and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (b->sleepers.load(std::memory_order_relaxed) == 0) return;
  // Records behind earlier ones it has not taken yet (its tail short of
  // `from`): a sleeper that missed these missed those too, and the write of
  // those, which saw its tail at or past its own start, woke it (the same
  // pairing, with the tail the sleeper stored before it counted itself).
  // So a burst of messages wakes a sleeping receiver once, not once a
  // message (a futex call each, and a switch to its thread, which on a busy
  // core is most of a small isend). A tail past `from` (the receiver took
  // the first chunks of this very message) is no such proof: wake.
  if (news != Bell::kRoom && seg_->ring(self_, rank)->tail.load(std::memory_order_relaxed) < from) return;
  if (news != Bell::kRoom) b->seq.fetch_add(1, std::memory_order_release);
  futex_wake_all(&b->seq);
}

bool P2P::pending() const {
  for (uint32_t src = 0; src < nranks_; ++src) {
    const transport::Ring* ring = in_rings_[src];
    if (ring->head.load(std::memory_order_acquire) != ring->tail.load(std::memory_order_relaxed)) return true;
  }
  return false;
}

void P2P::copy_out(uint32_t src, uint64_t pos, uint8_t* to, size_t n) {
  if (n == 0) return;  // `to` may be null then
  const transport::Ring* ring = in_rings_[src];
  size_t off = pos & kMask, first = std::min(n, transport::kRingBytes - off);
  std::memcpy(to, ring->data + off, first);
  if (n > first) std::memcpy(to + first, ring->data, n - first);
}

bool P2P::single_copy(size_t bytes) const { return rts_ && bytes >= rts_min_; }

bool P2P::put(uint32_t dst, const Record& rec, const void* payload, size_t n, bool& force) {
  transport::Ring* ring = seg_->ring(self_, dst);
  Out& o = out_[dst];
  const size_t len = record_bytes(n);
  auto room = [&] {
    if (o.head - o.tail_seen + len <= transport::kRingBytes) return true;
    o.tail_seen = ring->tail.load(std::memory_order_acquire);
    return o.head - o.tail_seen + len <= transport::kRingBytes;
  };
  if (!room()) {
    // 1. Ask the receiver to ring back once it has made room; 2. look
    //    again (it may have drained meanwhile); 3. wake its progress
    //    thread, which drains even while the receiver runs JavaScript.
    const uint64_t now = now_ns();
    bool again = false;
    if (!o.stuck) {
      o.stuck = true;
      o.stuck_since = now;
      ring->stuck.store(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      force = true;
      again = room();
    } else if (now - o.stuck_since >= kRewakeNs) {
      o.stuck_since = now;
      force = true;
    }
    if (!again) return false;
  }
  copy_in(ring, o.head, &rec, sizeof rec);
  copy_in(ring, o.head + sizeof rec, payload, n);
  o.head += len;
  ring->head.store(o.head, std::memory_order_release);
  return true;
}

// Writes as much of `s` as the ring to its destination has room for, one
// record per chunk, each published at once so the receiver can start on it;
// or, for a long message where single copy is allowed, one RTS. True once
// the whole message is in (or, by single copy, taken).
bool P2P::push(Send& s) {
  Out& o = out_[s.dst];
  const uint64_t from = o.head;
  bool wrote = false, force = false;
  if (!s.started && single_copy(s.total)) {
    Record rec{RTS, s.source, s.key, s.tag, uint32_t(sizeof(RtsBody)), s.total};
    s.cookie = next_cookie_++;
    RtsBody body{reinterpret_cast<uint64_t>(s.buf), s.cookie, pid_, 0};
    if (put(s.dst, rec, &body, sizeof body, force)) {
      s.started = true;
      s.awaiting = true;
      // The receiver may be in JavaScript for a while: its thread takes the
      // copy, so that this sender does not wait for it. A blocking send
      // first gives a receiver that is blocked in a call (and drains its
      // rings) the spin time to copy it itself: waking the thread costs a
      // system call here and a thread switch there, which on a busy core
      // was most of a 64 KiB message's latency (bench/P2P.md).
      if (s.nonblocking || policy_.spin_ns == 0) {
        force = true;
      } else {
        s.rts_ns = now_ns();
      }
      wrote = true;
    }
  }
  while (!s.awaiting && (!s.started || s.sent < s.total)) {
    const uint64_t chunk = std::min<uint64_t>(s.total - s.sent, kMaxPayload);
    Record rec{s.started ? CONT : (s.total <= kMaxPayload ? EAGER : FRAG), s.source, s.key, s.tag,
               uint32_t(chunk), s.total};
    if (!put(s.dst, rec, s.buf + s.sent, chunk, force)) break;
    s.started = true;
    s.sent += chunk;
    wrote = true;
  }
  const bool whole = s.started && !s.awaiting && s.sent == s.total;
  if (whole && o.stuck) {
    o.stuck = false;
    seg_->ring(self_, s.dst)->stuck.store(0, std::memory_order_relaxed);
  }
  if (wrote || force) ring_bell(s.dst, force ? Bell::kUrgent : Bell::kRecords, from);
  return whole;
}

// Queues a FIN for the RTS `cookie` of world rank `src`.
void P2P::answer(uint32_t src, uint64_t cookie, bool copied) {
  auto* rec = new Record{FIN, 0, cookie, copied ? 1 : 0, 0, 0};
  out_[src].control.push_back(rec);
  ++queued_;
}

// The FIN of the RTS `cookie` this rank sent `src`: that send is the first
// of its queue to `src` (it holds back the others).
void P2P::finished_rts(uint32_t src, uint64_t cookie, bool copied) {
  std::deque<Send*>& q = out_[src].queue;
  if (q.empty() || !q.front()->awaiting || q.front()->cookie != cookie) return;
  Send* s = q.front();
  s->awaiting = false;
  s->rts_ns = 0;
  // Refused: the message goes through the ring after all, as the CONT
  // records the receiver now waits for.
  s->sent = copied ? s->total : 0;
}

void P2P::push_queued() {
  if (queued_ == 0) return;
  for (uint32_t d = 0; d < nranks_; ++d) {
    Out& o = out_[d];
    for (;;) {
      // A FIN goes between messages: none is half written, or the one that
      // is waits for a FIN itself.
      const bool boundary = o.queue.empty() || !o.queue.front()->started || o.queue.front()->awaiting;
      if (!o.control.empty() && boundary) {
        bool force = false;
        const uint64_t from = o.head;
        if (!put(d, *o.control.front(), nullptr, 0, force)) {
          if (force) ring_bell(d, Bell::kUrgent, from);
          break;
        }
        delete o.control.front();
        o.control.pop_front();
        --queued_;
        ring_bell(d, Bell::kRecords, from);
        continue;
      }
      if (o.queue.empty() || !push(*o.queue.front())) break;
      Send* s = o.queue.front();
      o.queue.pop_front();
      --queued_;
      if (s->nonblocking) complete_send(s, ErrorClass::SUCCESS, {});
      else s->done = true;
    }
  }
}

// Takes every record in the ring from `src` into matching. A record that no
// sender writes (a length out of bounds) drops the rest of what is there.
bool P2P::drain(uint32_t src) {
  transport::Ring* ring = in_rings_[src];
  uint64_t t = in_tail_[src];
  const uint64_t h = ring->head.load(std::memory_order_acquire);
  if (h == t) return false;
  if (h - t > transport::kRingBytes) {
    t = h;
  }
  while (t != h) {
    Record rec;
    if (h - t < sizeof rec) {
      t = h;
      break;
    }
    copy_out(src, t, reinterpret_cast<uint8_t*>(&rec), sizeof rec);
    const size_t len = record_bytes(rec.payload);
    const bool sane = rec.payload <= kMaxPayload && len <= h - t && rec.kind >= EAGER && rec.kind <= FIN &&
                      (rec.kind != FRAG || rec.total > rec.payload) &&
                      (rec.kind != RTS || rec.payload == sizeof(RtsBody)) && (rec.kind != FIN || rec.payload == 0);
    if (!sane) {
      t = h;
      break;
    }
    take(src, rec, t + sizeof rec);
    t += len;
  }
  in_tail_[src] = t;
  ring->tail.store(t, std::memory_order_release);
  // Pairs with the sender's store of `stuck` and re-read of the tail.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (ring->stuck.load(std::memory_order_relaxed)) ring_bell(src, Bell::kRoom, 0);
  return true;
}

// One record from the ring of world rank `src`, its payload at `pos`.
void P2P::take(uint32_t src, const Record& rec, uint64_t pos) {
  Assembly& a = assembly_[src];
  if (rec.kind == CONT) {
    if (!a.active) return;  // no message is in progress: not from a sender of ours
    const uint64_t n = std::min<uint64_t>(rec.payload, a.total - a.got);
    if (a.recv && a.got < a.recv->cap) {
      copy_out(src, pos, a.recv->buf + a.got, std::min<uint64_t>(n, a.recv->cap - a.got));
    } else if (a.msg) {
      copy_out(src, pos, a.msg->data.get() + a.got, n);
    }
    a.got += n;
    if (a.msg) a.msg->got = a.got;
    if (a.got == a.total) {
      Recv* r = a.recv;
      a = Assembly{};
      if (r) finish(r);
    }
    return;
  }
  if (rec.kind == FIN) {
    finished_rts(src, rec.key, rec.tag == 1);
    return;
  }
  // A new message. Only a broken record stream can leave one unfinished
  // here; its remaining bytes are dropped.
  a = Assembly{};
  RtsBody body{};
  if (rec.kind == RTS) copy_out(src, pos, reinterpret_cast<uint8_t*>(&body), sizeof body);
  // Single copy from the sender's buffer; refused, the sender streams it.
  auto fetch = [&](uint8_t* to, uint64_t n) {
    bool copied = !rts_refused_ && transport::cma_read(body.pid, to, reinterpret_cast<const void*>(body.addr), n);
    answer(src, body.cookie, copied);
    return copied;
  };
  const uint64_t total = rec.kind == EAGER ? rec.payload : rec.total;
  const uint64_t first = rec.kind == RTS ? 0 : rec.payload;
  Recv* r = match_posted(rec.key, rec.source, rec.tag);
  if (!r && dead(rec.key)) {
    // Nobody can receive it: an RTS is answered as if copied, the rest of
    // a long message skipped.
    if (rec.kind == RTS) answer(src, body.cookie, true);
    else if (first < total) a = Assembly{true, total, first, nullptr, nullptr};
    return;
  }
  if (r && !r->probe) {
    unpost(r);
    r->st.source = rec.source;
    r->st.tag = rec.tag;
    r->total = total;
    if (rec.kind == RTS) {
      if (fetch(r->buf, std::min<uint64_t>(total, r->cap))) finish(r);
      else a = Assembly{true, total, 0, r, nullptr};
      return;
    }
    copy_out(src, pos, r->buf, std::min<uint64_t>(first, r->cap));
    if (first == total) finish(r);
    else a = Assembly{true, total, first, r, nullptr};
    return;
  }
  auto m = std::make_unique<Msg>();
  m->key = rec.key;
  m->source = rec.source;
  m->tag = rec.tag;
  m->from = src;
  m->total = total;
  m->got = first;
  m->data.reset(new uint8_t[total]);
  if (rec.kind == RTS) {
    // Unexpected: copied now, into the heap, so that the sender need not
    // wait for a receive (buffering stays unbounded, both ways at once too).
    if (fetch(m->data.get(), total)) m->got = total;
  } else {
    copy_out(src, pos, m->data.get(), first);
  }
  if (m->got < total) a = Assembly{true, total, m->got, nullptr, m.get()};
  if (r) {
    // An improbe posted before the message came: it takes it.
    unpost(r);
    r->st = claim(std::move(m));
    r->total = r->st.bytes;
    finish(r);
    return;
  }
  unexpected_.push_back(std::move(m));
}

void P2P::progress() {
  for (uint32_t src = 0; src < nranks_; ++src) drain(src);
  push_queued();
}

// ---- Matching ---------------------------------------------------------------

P2P::Recv* P2P::match_posted(uint64_t key, int32_t source, int32_t tag) {
  for (Recv* r = posted_head_; r; r = r->next) {
    if (matches(r->m, key, source, tag)) return r;
  }
  return nullptr;
}

std::list<std::unique_ptr<P2P::Msg>>::iterator P2P::find_unexpected(const Match& m) {
  return std::find_if(unexpected_.begin(), unexpected_.end(),
                      [&](const std::unique_ptr<Msg>& u) { return matches(m, u->key, u->source, u->tag); });
}

void P2P::post(Recv* r) {
  r->posted = true;
  r->prev = posted_tail_;
  r->next = nullptr;
  if (posted_tail_) posted_tail_->next = r;
  else posted_head_ = r;
  posted_tail_ = r;
}

void P2P::unpost(Recv* r) {
  if (!r->posted) return;
  if (r->prev) r->prev->next = r->next;
  else posted_head_ = r->next;
  if (r->next) r->next->prev = r->prev;
  else posted_tail_ = r->prev;
  r->posted = false;
  r->prev = r->next = nullptr;
}

// `r` gives up: out of the posted queue, and a message it was receiving
// has its remaining bytes dropped.
void P2P::abandon(Recv* r) {
  unpost(r);
  for (Assembly& a : assembly_) {
    if (a.recv == r) a.recv = nullptr;
  }
}

// Receive `r` takes message `m` (from the unexpected queue or an mprobe):
// the bytes that are there now, and the rest straight from the ring. True
// when `r` has finished (a nonblocking r is then gone).
bool P2P::bind(std::unique_ptr<Msg> m, Recv* r) {
  r->st.source = m->source;
  r->st.tag = m->tag;
  r->total = m->total;
  const size_t n = std::min<uint64_t>(m->got, r->cap);
  if (n) std::memcpy(r->buf, m->data.get(), n);
  if (m->got == m->total) {
    finish(r);
    return true;
  }
  Assembly& a = assembly_[m->from];
  a.recv = r;
  a.msg = nullptr;
  return false;
}

// `r` has its whole message (or has failed, error set): the status, a
// truncation, and for a nonblocking one the report, after which it is gone.
void P2P::finish(Recv* r) {
  r->done = true;
  if (r->error == ErrorClass::SUCCESS) {
    if (r->probe) {
      r->st.bytes = r->total;
    } else {
      r->st.bytes = std::min<uint64_t>(r->total, r->cap);
      if (r->total > r->cap) {
        r->error = ErrorClass::TRUNCATE;
        r->message = std::string(r->what) + ": the message has " + std::to_string(r->total) +
                     " bytes but the receive buffer holds " + std::to_string(r->cap);
      }
    }
  }
  if (!r->nonblocking) return;
  Report rep = std::move(r->report);
  if (rep.status) {
    rep.status[0] = r->st.source;
    rep.status[1] = r->st.tag;
    rep.status[2] = double(r->st.bytes);
    rep.status[3] = double(r->st.handle);
  }
  rep.op->error = r->error;
  rep.op->message = std::move(r->message);
  nb_recvs_.erase(r->self);
  if (sink_) sink_(rep.op);
}

void P2P::complete_send(Send* s, ErrorClass e, const std::string& message) {
  Report rep = std::move(s->report);
  rep.op->error = e;
  rep.op->message = message;
  nb_sends_.erase(s->self);
  if (sink_) sink_(rep.op);
}

// ---- Waiting ----------------------------------------------------------------

std::string P2P::failure(const Watch& w) const {
  if (w.count == 1) return live_.failure(w.ranks[0]);
  // ANY_SOURCE: the job as a whole, then whether anyone is left to send.
  std::string job = live_.failure(self_);
  if (!job.empty()) return job;
  std::string first;
  for (uint32_t i = 0; i < w.count; ++i) {
    if (w.ranks[i] == self_) return {};
    std::string f = live_.failure(w.ranks[i]);
    if (f.empty()) return {};
    if (first.empty()) first = f;
  }
  if (first.empty()) return {};
  return "no rank that could send the message is left (" + first + ")";
}

bool P2P::pause(uint32_t seen, uint64_t& since_ns, long max_sleep_ns) {
  // The wait's start is this first call's clock read, not one on entry to
  // block(): a receive whose message is already there reads no clock.
  const uint64_t now = now_ns();
  if (since_ns == 0) since_ns = now;
  const uint64_t waited = now - since_ns;
  // 1. Spin: a peer on another core usually sends within microseconds.
  // It watches the rings themselves (and seq for news that is not a
  // record): the doorbell's line stays where it is, so a sender's ring
  // costs it no transfer of a line this rank keeps reading.
  if (waited < policy_.spin_ns) {
    for (int i = 0; i < 256; ++i) {
      cpu_relax();
      if (pending() || bell_->seq.load(std::memory_order_acquire) != seen) return false;
    }
    return false;
  }
  // 2. Yield: lets an oversubscribed peer run, still without a futex.
  if (waited < uint64_t(policy_.spin_ns) + policy_.yield_ns) {
    sched_yield();
    return false;
  }
  // 3. Sleep, counted in the doorbell's sleepers so senders wake us.
  bell_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!pending() && bell_->seq.load(std::memory_order_seq_cst) == seen) {
    futex_wait(&bell_->seq, seen, std::min(max_sleep_ns, kSliceNs));
  }
  bell_->sleepers.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

template <class Done, class Cleanup>
void P2P::block(std::unique_lock<std::mutex>& lk, Done done, const Watch& w, const char* what, Cleanup cleanup) {
  uint64_t since = 0;  // set by pause(): a receive whose message is there reads no clock
  for (;;) {
    // Read before progress: whatever arrives after it moves the doorbell.
    const uint32_t seen = bell_->seq.load(std::memory_order_acquire);
    progress();
    if (done()) return;
    lk.unlock();
    const bool slept = pause(seen, since, kSliceNs);
    lk.lock();
    if (!slept) continue;
    std::string failed = failure(w);
    if (failed.empty()) continue;
    // The peer may have sent just before it went.
    progress();
    if (done()) return;
    cleanup();
    throw CoreError(ErrorClass::PROC_FAILED, std::string(what) + ": " + failed);
  }
}

void P2P::drive(const progress::Op* op, uint64_t since_ns) {
  std::unique_lock<std::mutex> lk(mu_);
  const uint32_t seen = bell_->seq.load(std::memory_order_acquire);
  progress();
  if (!op || op->state.load(std::memory_order_acquire) == progress::Op::DONE) return;
  lk.unlock();
  uint64_t since = since_ns;
  pause(seen, since, 1000 * 1000);
}

// Nonblocking requests whose peers have gone fail (after the rings have
// been drained: what they sent before going is received).
void P2P::check_nonblocking() {
  for (auto it = nb_recvs_.begin(); it != nb_recvs_.end();) {
    Recv* r = (it++)->get();
    std::string failed = failure(r->watch);
    if (failed.empty()) continue;
    abandon(r);
    r->error = ErrorClass::PROC_FAILED;
    r->message = std::string(r->what) + ": " + failed;
    finish(r);
  }
  for (auto it = nb_sends_.begin(); it != nb_sends_.end();) {
    Send* s = (it++)->get();
    Watch w{&s->dst, 1};
    std::string failed = failure(w);
    if (failed.empty()) continue;
    std::deque<Send*>& q = out_[s->dst].queue;
    q.erase(std::remove(q.begin(), q.end(), s), q.end());
    --queued_;
    complete_send(s, ErrorClass::PROC_FAILED, "isend: " + failed);
  }
}

void P2P::kick() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!nb_recvs_.empty() || !nb_sends_.empty()) wake_thread();
}

void P2P::wake_thread() {
  // Once until it has run: a call made while the thread waits for the lock
  // (posting receives one after another) has nothing to add.
  if (!thread_.joinable() || thread_listening_ || thread_called_) return;
  thread_called_ = true;
  bell_->urgent.fetch_add(1, std::memory_order_release);
  futex_wake_all(&bell_->urgent);
}

void P2P::thread_main() {
  std::unique_lock<std::mutex> lk(mu_);
  uint64_t checked = now_ns();
  while (!stop_.load(std::memory_order_acquire)) {
    thread_called_ = false;
    const uint32_t seen = bell_->seq.load(std::memory_order_acquire);
    try {
      progress();
      if (!nb_recvs_.empty() || !nb_sends_.empty()) {
        const uint64_t now = now_ns();
        if (now - checked >= uint64_t(kSliceNs)) {
          checked = now;
          check_nonblocking();
        }
      }
    } catch (const std::exception&) {
      // Out of memory for an unexpected message: try again at the next ring.
    }
    const bool active = !nb_recvs_.empty() || !nb_sends_.empty();
    thread_listening_ = active;
    // Read under the lock: new work (wake_thread, also under it) moves it after.
    const uint32_t urgent = bell_->urgent.load(std::memory_order_acquire);
    lk.unlock();
    if (active) {
      bell_->sleepers.fetch_add(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!pending() && bell_->seq.load(std::memory_order_seq_cst) == seen && !stop_.load(std::memory_order_acquire)) {
        futex_wait(&bell_->seq, seen, kSliceNs);
      }
      bell_->sleepers.fetch_sub(1, std::memory_order_relaxed);
    } else if (!stop_.load(std::memory_order_acquire)) {
      futex_wait(&bell_->urgent, urgent, 1000 * 1000 * 1000);
    }
    lk.lock();
  }
  thread_listening_ = false;
}

// ---- Calls ------------------------------------------------------------------

void P2P::send(uint64_t key, int32_t source, int32_t tag, uint32_t dst, const void* buf, size_t bytes) {
  Send s(key, source, tag, dst, buf, bytes);
  std::unique_lock<std::mutex> lk(mu_);
  Out& o = out_[dst];
  if (o.queue.empty() && push(s)) return;
  o.queue.push_back(&s);
  ++queued_;
  Watch w{&s.dst, 1};
  block(lk, [&] {
    if (s.done) return true;
    if (s.rts_ns != 0 && now_ns() - s.rts_ns >= policy_.spin_ns) {
      s.rts_ns = 0;
      ring_bell(dst, Bell::kUrgent, o.head);
    }
    return false;
  }, w, "send", [&] {
    o.queue.erase(std::remove(o.queue.begin(), o.queue.end(), &s), o.queue.end());
    --queued_;
  });
}

void P2P::isend(uint64_t key, int32_t source, int32_t tag, uint32_t dst, const void* buf, size_t bytes, Report r) {
  auto s = std::make_unique<Send>(key, source, tag, dst, buf, bytes);
  s->nonblocking = true;
  s->report = std::move(r);
  std::lock_guard<std::mutex> lk(mu_);
  Send* raw = s.get();
  raw->self = nb_sends_.insert(nb_sends_.end(), std::move(s));
  Out& o = out_[dst];
  if (o.queue.empty() && push(*raw)) {
    complete_send(raw, ErrorClass::SUCCESS, {});
    return;
  }
  o.queue.push_back(raw);
  ++queued_;
  wake_thread();
}

void P2P::recv(const Match& m, void* buf, size_t cap, const Watch& w, Status& st) {
  Recv r;
  r.m = m;
  r.buf = static_cast<uint8_t*>(buf);
  r.cap = cap;
  r.watch = w;
  // What waits unexpected came first; anything still in the rings is
  // later, and meets the posted receive (one copy, straight from the ring).
  std::unique_lock<std::mutex> lk(mu_);
  auto it = find_unexpected(m);
  if (it != unexpected_.end()) {
    std::unique_ptr<Msg> msg = std::move(*it);
    unexpected_.erase(it);
    bind(std::move(msg), &r);
  } else {
    post(&r);
  }
  if (!r.done) block(lk, [&] { return r.done; }, w, "recv", [&] { abandon(&r); });
  st = r.st;
  if (r.error != ErrorClass::SUCCESS) throw CoreError(r.error, r.message);
}

std::unique_ptr<P2P::Recv> P2P::nonblocking(const Match& m, const Watch& w, Report rep) {
  auto r = std::make_unique<Recv>();
  r->m = m;
  r->watch_copy.assign(w.ranks, w.ranks + w.count);
  r->watch = Watch{r->watch_copy.data(), w.count};
  r->nonblocking = true;
  r->report = std::move(rep);
  return r;
}

void P2P::forget(uint64_t key) {
  std::lock_guard<std::mutex> lk(mu_);
  if (key >> 63) {
    // A one-rank communicator (keyed by a serial, never reused): its
    // messages come from this rank only and are in its own ring already.
    drain(self_);
  } else {
    uint32_t& gen = freed_[uint32_t(key)];
    gen = uint32_t(key >> 32);
  }
  for (Assembly& a : assembly_) {
    if (a.msg && a.msg->key == key) a.msg = nullptr;  // its other chunks are skipped
  }
  unexpected_.remove_if([key](const std::unique_ptr<Msg>& m) { return m->key == key; });
}

bool P2P::dead(uint64_t key) const {
  if (freed_.empty() || key >> 63) return false;
  auto it = freed_.find(uint32_t(key));
  return it != freed_.end() && transport::seq_reached(it->second, uint32_t(key >> 32));
}

Status P2P::claim(std::unique_ptr<Msg> m) {
  const uint64_t handle = next_handle_++;
  Status st{m->source, m->tag, m->total, handle};
  probed_.emplace(handle, std::move(m));
  return st;
}

void P2P::irecv(const Match& m, void* buf, size_t cap, const Watch& w, Report rep) {
  auto owned = nonblocking(m, w, std::move(rep));
  Recv* r = owned.get();
  r->buf = static_cast<uint8_t*>(buf);
  r->cap = cap;
  std::lock_guard<std::mutex> lk(mu_);
  r->self = nb_recvs_.insert(nb_recvs_.end(), std::move(owned));
  // As recv; the rings are drained by whoever waits for or tests it.
  auto it = find_unexpected(m);
  if (it != unexpected_.end()) {
    std::unique_ptr<Msg> msg = std::move(*it);
    unexpected_.erase(it);
    if (bind(std::move(msg), r)) return;
  } else {
    post(r);
  }
  // The thread is woken by kick() at the end of the JavaScript turn, not
  // here: a receive waited for in the same turn (a window of irecvs and a
  // waitAll) then never wakes it, nor do the messages that complete it.
  // Nothing a sender waits for depends on it meanwhile: a full ring and a
  // single copy wake the thread themselves (Bell::kUrgent).
}

Status P2P::probe(const Match& m, const Watch& w) {
  Status st;
  std::unique_lock<std::mutex> lk(mu_);
  block(lk, [&] {
    auto it = find_unexpected(m);
    if (it == unexpected_.end()) return false;
    st = Status{(*it)->source, (*it)->tag, (*it)->total, 0};
    return true;
  }, w, "probe", [] {});
  return st;
}

bool P2P::iprobe(const Match& m, Status& st) {
  std::lock_guard<std::mutex> lk(mu_);
  progress();
  auto it = find_unexpected(m);
  if (it == unexpected_.end()) return false;
  st = Status{(*it)->source, (*it)->tag, (*it)->total, 0};
  return true;
}

Status P2P::mprobe(const Match& m, const Watch& w) {
  Status st;
  std::unique_lock<std::mutex> lk(mu_);
  block(lk, [&] {
    auto it = find_unexpected(m);
    if (it == unexpected_.end()) return false;
    st = claim(std::move(*it));
    unexpected_.erase(it);
    return true;
  }, w, "mprobe", [] {});
  return st;
}

void P2P::improbe(const Match& m, const Watch& w, Report rep) {
  auto owned = nonblocking(m, w, std::move(rep));
  Recv* r = owned.get();
  r->what = "improbe";
  r->probe = true;
  std::lock_guard<std::mutex> lk(mu_);
  r->self = nb_recvs_.insert(nb_recvs_.end(), std::move(owned));
  auto it = find_unexpected(m);
  if (it != unexpected_.end()) {
    r->st = claim(std::move(*it));
    unexpected_.erase(it);
    r->total = r->st.bytes;
    finish(r);
    return;
  }
  post(r);
  // As irecv: kick() wakes the thread.
}

void P2P::mrecv(uint64_t handle, void* buf, size_t cap, Status& st) {
  std::unique_lock<std::mutex> lk(mu_);
  auto it = probed_.find(handle);
  if (it == probed_.end()) {
    throw CoreError(ErrorClass::REQUEST, "mrecv: message " + std::to_string(handle) +
                                             " is not one mprobe or improbe matched, or it was received already");
  }
  std::unique_ptr<Msg> msg = std::move(it->second);
  probed_.erase(it);
  const uint32_t from = msg->from;
  Recv r;
  r.what = "mrecv";
  r.buf = static_cast<uint8_t*>(buf);
  r.cap = cap;
  r.watch = Watch{&from, 1};
  bind(std::move(msg), &r);
  if (!r.done) block(lk, [&] { return r.done; }, r.watch, "mrecv", [&] { abandon(&r); });
  st = r.st;
  st.handle = 0;
  if (r.error != ErrorClass::SUCCESS) throw CoreError(r.error, r.message);
}

}  // namespace nodempi::p2p
