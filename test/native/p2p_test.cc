// Unit test of point-to-point messages (native/core/p2p) without Node:
// ranks are P2P objects over one real segment in this process, driven by
// threads (as thread mode's ranks are).
//
// What it covers:
//   1. order: messages of one (sender, communicator, tag) never overtake,
//      eager and fragmented, expected and unexpected, tags interleaved;
//   2. matching: ANY_SOURCE and ANY_TAG, communicator keys kept apart,
//      receives matched in the order they were posted;
//   3. truncation: the first bytes written, status filled, TRUNCATE, and
//      the next message unharmed; zero-byte messages;
//   4. fragments: two ranks that both send a long message before either
//      receives (rings full both ways) finish; a long unexpected message is
//      assembled on the heap, a receive then takes it mid-way;
//   5. probe, iprobe, mprobe/mrecv (a handle received once only);
//   6. nonblocking: isend/irecv/improbe complete through the sink, with
//      the status written first; drive() progresses them; the progress
//      thread drains a ring a blocked sender filled while its receiver does
//      nothing;
//   7. failure: a receive from a rank that has exited, and an ANY_SOURCE
//      receive once every sender has, fail with PROC_FAILED, blocking and
//      nonblocking.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/p2p/p2p.h"
#include "core/progress/lane.h"
#include "core/transport/segment.h"

using namespace nodempi;
using namespace nodempi::p2p;
using nodempi::test::g_context;

namespace {

constexpr uint64_t kKey = 7;

struct Job {
  std::unique_ptr<transport::Segment> seg;
  std::vector<std::unique_ptr<P2P>> ranks;
  explicit Job(uint32_t n) {
    std::string err;
    seg.reset(transport::Segment::create(n, &err));
    if (!seg) {
      std::fprintf(stderr, "Segment::create: %s\n", err.c_str());
      std::exit(2);
    }
    // Ranks that are threads of this process: alive as long as it is.
    for (uint32_t r = 0; r < n; ++r) seg->header()->ranks[r].pid.store(int32_t(getpid()));
    for (uint32_t r = 0; r < n; ++r) ranks.emplace_back(new P2P(seg.get(), r));
  }
  P2P& operator[](uint32_t r) { return *ranks[r]; }
};

std::vector<uint32_t> all_but(uint32_t n, uint32_t self) {
  std::vector<uint32_t> v;
  for (uint32_t r = 0; r < n; ++r) if (r != self) v.push_back(r);
  return v;
}

Watch one(const uint32_t& r) { return Watch{&r, 1}; }

uint8_t pattern(uint64_t seed, size_t i) { return uint8_t((seed * 131 + i * 7 + (i >> 8)) & 0xff); }

std::vector<uint8_t> message(uint64_t seed, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(seed, i);
  return v;
}

bool is_message(const uint8_t* p, uint64_t seed, size_t n) {
  for (size_t i = 0; i < n; ++i) if (p[i] != pattern(seed, i)) return false;
  return true;
}

// A nonblocking request as the engine would hold it.
struct Pending {
  std::shared_ptr<progress::Op> op = std::make_shared<progress::Op>();
  double status[4] = {-9, -9, -9, -9};
};

void sink_into(P2P& p, std::atomic<int>& completions) {
  p.set_sink([&completions](const std::shared_ptr<progress::Op>& op) {
    op->state.store(progress::Op::DONE, std::memory_order_release);
    completions.fetch_add(1);
  });
}

bool done(const Pending& q) { return q.op->state.load(std::memory_order_acquire) == progress::Op::DONE; }

void wait(P2P& p, const Pending& q) {
  const uint64_t since = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count());
  while (!done(q)) p.drive(q.op.get(), since);
}

// ---- 1. Order ------------------------------------------------------------------

void test_order() {
  g_context = "order";
  Job job(2);
  const int n = test::long_form() ? 20000 : 3000;
  // Sizes cross the eager limit now and then, so fragments mix with eager
  // records; three tags interleave.
  auto size_of = [](int i) { return i % 97 == 0 ? size_t(3 * kMaxPayload + 5) : size_t(8 + i % 40); };
  std::thread sender([&] {
    g_context = "order sender";
    for (int i = 0; i < n; ++i) {
      std::vector<uint8_t> m = message(uint64_t(i), size_of(i));
      job[0].send(kKey, 0, i % 3, 1, m.data(), m.size());
    }
  });
  // Tag 2 first, all of it (the others pile up unexpected), then 0 and 1
  // alternately.
  uint32_t src = 0;
  std::vector<uint8_t> buf(4 * kMaxPayload);
  auto take = [&](int i) {
    Status st;
    job[1].recv(Match{kKey, 0, i % 3}, buf.data(), buf.size(), one(src), st);
    CHECK_EQ(st.bytes, uint64_t(size_of(i)));
    CHECK_EQ(st.tag, i % 3);
    CHECK_EQ(st.source, 0);
    CHECK(is_message(buf.data(), uint64_t(i), size_of(i)));
  };
  for (int i = 2; i < n; i += 3) take(i);
  for (int i = 0; i < n; ++i) if (i % 3 != 2) take(i);
  sender.join();
  CHECK_EQ(job[1].in_flight(), size_t(0));
}

// ---- 2. Matching ---------------------------------------------------------------

void test_matching() {
  g_context = "matching";
  Job job(3);
  std::vector<uint32_t> peers0 = all_but(3, 0);
  Watch any{peers0.data(), uint32_t(peers0.size())};
  // Keys apart: the same tag on key 8 is not seen by key 7.
  int32_t v = 11;
  job[1].send(8, 1, 5, 0, &v, sizeof v);
  v = 12;
  job[2].send(kKey, 2, 5, 0, &v, sizeof v);
  v = 13;
  job[1].send(kKey, 1, 6, 0, &v, sizeof v);
  int32_t got = 0;
  Status st;
  job[0].recv(Match{kKey, kAnySource, 5}, &got, sizeof got, any, st);
  CHECK_EQ(got, 12);
  CHECK_EQ(st.source, 2);
  job[0].recv(Match{kKey, kAnySource, kAnyTag}, &got, sizeof got, any, st);
  CHECK_EQ(got, 13);
  CHECK_EQ(st.tag, 6);
  job[0].recv(Match{8, kAnySource, kAnyTag}, &got, sizeof got, any, st);
  CHECK_EQ(got, 11);
  CHECK_EQ(st.source, 1);

  // Posted receives match in post order: an ANY_TAG posted first takes the
  // first message, the specific one posted after it the second.
  std::atomic<int> completions{0};
  sink_into(job[0], completions);
  Pending a, b;
  int32_t ra = 0, rb = 0;
  uint32_t src1 = 1;
  job[0].irecv(Match{kKey, 1, kAnyTag}, &ra, sizeof ra, one(src1), Report{a.status, a.op});
  job[0].irecv(Match{kKey, 1, 4}, &rb, sizeof rb, one(src1), Report{b.status, b.op});
  CHECK(!done(a) && !done(b));
  v = 21;
  job[1].send(kKey, 1, 4, 0, &v, sizeof v);
  v = 22;
  job[1].send(kKey, 1, 4, 0, &v, sizeof v);
  wait(job[0], a);
  wait(job[0], b);
  CHECK_EQ(ra, 21);
  CHECK_EQ(rb, 22);
  CHECK_EQ(int(a.status[0]), 1);
  CHECK_EQ(int(a.status[1]), 4);
  CHECK_EQ(int(a.status[2]), 4);
  CHECK_EQ(completions.load(), 2);
  CHECK(a.op->error == ErrorClass::SUCCESS);

  // A message to oneself.
  v = 31;
  job[2].send(kKey, 2, 0, 2, &v, sizeof v);
  uint32_t self = 2;
  job[2].recv(Match{kKey, 2, 0}, &got, sizeof got, one(self), st);
  CHECK_EQ(got, 31);
}

// ---- 3. Truncation ---------------------------------------------------------------

void test_truncation() {
  g_context = "truncation";
  Job job(2);
  // Rank 1's thread drains what does not fit the ring before it receives.
  job[1].start_thread();
  uint32_t src = 0;
  for (size_t size : {size_t(100), size_t(5 * kMaxPayload + 3)}) {
    std::vector<uint8_t> m = message(size, size);
    job[0].send(kKey, 0, 1, 1, m.data(), m.size());
    job[0].send(kKey, 0, 1, 1, m.data(), 10);
    std::vector<uint8_t> buf(size, 0xee);
    Status st;
    std::string what = EXPECT_ERROR(TRUNCATE, "bytes but the receive buffer holds 40",
                                    [&] { job[1].recv(Match{kKey, 0, 1}, buf.data(), 40, one(src), st); });
    CHECK(what.find("the message has " + std::to_string(size)) != std::string::npos);
    CHECK_EQ(st.bytes, uint64_t(40));
    CHECK_EQ(st.tag, 1);
    CHECK(is_message(buf.data(), size, 40));
    CHECK_EQ(int(buf[40]), 0xee);  // nothing past the receive's bytes
    job[1].recv(Match{kKey, 0, 1}, buf.data(), buf.size(), one(src), st);
    CHECK_EQ(st.bytes, uint64_t(10));
    CHECK(is_message(buf.data(), size, 10));
  }
  // Zero bytes, into no room.
  job[0].send(kKey, 0, 3, 1, nullptr, 0);
  uint8_t none = 0x55;
  Status st;
  job[1].recv(Match{kKey, 0, 3}, &none, 0, one(src), st);
  CHECK_EQ(st.bytes, uint64_t(0));
  CHECK_EQ(int(none), 0x55);
}

// ---- 4. Fragments ----------------------------------------------------------------

void test_fragments() {
  g_context = "fragments";
  Job job(2);
  const size_t size = 4 * 1024 * 1024 + 13;
  // Both send first: each blocked sender drains the other's ring meanwhile.
  auto side = [&](uint32_t me) {
    g_context = "fragments rank " + std::to_string(me);
    uint32_t other = 1 - me;
    std::vector<uint8_t> m = message(me + 1, size);
    job[me].send(kKey, int32_t(me), 0, other, m.data(), m.size());
    std::vector<uint8_t> got(size);
    Status st;
    job[me].recv(Match{kKey, int32_t(other), 0}, got.data(), got.size(), one(other), st);
    CHECK_EQ(st.bytes, uint64_t(size));
    CHECK(is_message(got.data(), other + 1, size));
  };
  std::thread t(side, 1);
  side(0);
  t.join();

  // A long message starts arriving unexpected; the receive takes it
  // part-way through and gets the rest straight from the ring.
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    std::vector<uint8_t> m = message(9, size);
    job[0].send(kKey, 0, 2, 1, m.data(), m.size());
    sent.store(true);
  });
  // Let some arrive first (progress by probing).
  Status st;
  uint32_t src = 0;
  st = job[1].probe(Match{kKey, 0, 2}, one(src));
  CHECK_EQ(st.bytes, uint64_t(size));
  std::vector<uint8_t> got(size);
  job[1].recv(Match{kKey, 0, 2}, got.data(), got.size(), one(src), st);
  CHECK(is_message(got.data(), 9, size));
  sender.join();
  CHECK(sent.load());
}

// ---- 5. Probes -------------------------------------------------------------------

void test_probes() {
  g_context = "probes";
  Job job(2);
  // Long messages may go by single copy, which the receiver's thread answers.
  job[1].start_thread();
  uint32_t src = 0;
  Status st;
  CHECK(!job[1].iprobe(Match{kKey, 0, 4}, st));
  std::vector<uint8_t> m = message(4, 2 * kMaxPayload + 1);
  job[0].isend(kKey, 0, 4, 1, m.data(), m.size(), Report{nullptr, std::make_shared<progress::Op>()});
  double x = 2.5;
  job[0].send(kKey, 0, 4, 1, &x, sizeof x);
  st = job[1].probe(Match{kKey, 0, 4}, one(src));
  CHECK_EQ(st.bytes, uint64_t(m.size()));
  CHECK(job[1].iprobe(Match{kKey, kAnySource, kAnyTag}, st));
  CHECK_EQ(st.handle, uint64_t(0));
  // mprobe takes the first out of matching: a receive gets the second.
  Status first = job[1].mprobe(Match{kKey, 0, 4}, one(src));
  CHECK(first.handle > 0);
  CHECK_EQ(first.bytes, uint64_t(m.size()));
  double y = 0;
  job[1].recv(Match{kKey, 0, 4}, &y, sizeof y, one(src), st);
  CHECK(y == 2.5);
  std::vector<uint8_t> got(m.size());
  job[1].mrecv(first.handle, got.data(), got.size(), st);
  CHECK(is_message(got.data(), 4, m.size()));
  CHECK_EQ(st.bytes, uint64_t(m.size()));
  EXPECT_ERROR(REQUEST, "received already", [&] { job[1].mrecv(first.handle, got.data(), got.size(), st); });
  EXPECT_ERROR(REQUEST, nullptr, [&] { job[1].mrecv(999, got.data(), got.size(), st); });

  // improbe posted before the message: completes with the handle.
  std::atomic<int> completions{0};
  sink_into(job[1], completions);
  Pending q;
  job[1].improbe(Match{kKey, 0, kAnyTag}, one(src), Report{q.status, q.op});
  CHECK(!done(q));
  x = 3.5;
  job[0].send(kKey, 0, 9, 1, &x, sizeof x);
  wait(job[1], q);
  CHECK_EQ(int(q.status[1]), 9);
  CHECK_EQ(int(q.status[2]), 8);
  CHECK(q.status[3] >= 1);
  job[1].mrecv(uint64_t(q.status[3]), &y, sizeof y, st);
  CHECK(y == 3.5);

  // forget(): a freed communicator's unexpected messages go, others stay.
  constexpr uint64_t kOther = kKey + 1;
  x = 4.5;
  job[0].send(kKey, 0, 2, 1, &x, sizeof x);
  job[0].send(kOther, 0, 2, 1, &x, sizeof x);
  CHECK(job[1].iprobe(Match{kOther, 0, 2}, st));
  CHECK(job[1].iprobe(Match{kKey, 0, 2}, st));
  job[1].forget(kKey);
  CHECK(!job[1].iprobe(Match{kKey, kAnySource, kAnyTag}, st));
  CHECK(job[1].iprobe(Match{kOther, 0, 2}, st));
  job[1].recv(Match{kOther, 0, 2}, &y, sizeof y, one(src), st);
  CHECK(y == 4.5);
  // What arrives after the free goes too, short or long (the long one's
  // sender is not held up: its single copy is answered, its chunks are
  // skipped); the context's next use, a newer generation, is not affected.
  std::vector<uint8_t> big = message(5, 4 * kMaxPayload + 3);
  job[0].send(kKey, 0, 3, 1, big.data(), big.size());
  job[0].send(kKey, 0, 3, 1, &x, sizeof x);
  constexpr uint64_t kReused = kKey + (uint64_t(1) << 32);
  x = 5.5;
  job[0].send(kReused, 0, 3, 1, &x, sizeof x);
  job[1].recv(Match{kReused, 0, 3}, &y, sizeof y, one(src), st);
  CHECK(y == 5.5);
  CHECK(!job[1].iprobe(Match{kKey, kAnySource, kAnyTag}, st));
  // A one-rank communicator (keyed by a serial): its messages to itself
  // may still be in this rank's ring when it is freed.
  constexpr uint64_t kSerial = uint64_t(1) << 63 | 5;
  job[0].send(kSerial, 0, 1, 0, &x, sizeof x);
  job[0].forget(kSerial);
  CHECK(!job[0].iprobe(Match{kSerial, kAnySource, kAnyTag}, st));
}

// ---- 6. Nonblocking ----------------------------------------------------------------

void test_nonblocking() {
  g_context = "nonblocking";
  Job job(2);
  std::atomic<int> c0{0}, c1{0};
  sink_into(job[0], c0);
  sink_into(job[1], c1);
  uint32_t src = 0;
  // Many small isends, then their irecvs: order kept, all complete.
  const int n = 2000;
  std::vector<Pending> sends(n), recvs(n);
  std::vector<int32_t> out(n), in(n, -1);
  for (int i = 0; i < n; ++i) {
    out[i] = i;
    job[0].isend(kKey, 0, 1, 1, &out[i], sizeof out[i], Report{nullptr, sends[i].op});
  }
  for (int i = 0; i < n; ++i) job[1].irecv(Match{kKey, 0, 1}, &in[i], sizeof in[i], one(src), Report{recvs[i].status, recvs[i].op});
  job[1].start_thread();
  job[0].start_thread();
  for (int i = 0; i < n; ++i) wait(job[1], recvs[i]);
  for (int i = 0; i < n; ++i) wait(job[0], sends[i]);
  for (int i = 0; i < n; ++i) CHECK_EQ(in[i], i);
  CHECK_EQ(c0.load(), n);
  CHECK_EQ(c1.load(), n);

  // The progress thread completes an irecv nobody waits for, once kicked
  // (as the binding does at the end of the JavaScript turn).
  Pending r;
  int32_t v = 0, w = 77;
  job[1].irecv(Match{kKey, 0, 2}, &v, sizeof v, one(src), Report{r.status, r.op});
  job[1].kick();
  job[0].send(kKey, 0, 2, 1, &w, sizeof w);
  for (int i = 0; i < 60000 && !done(r); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(done(r));
  CHECK_EQ(v, 77);

  // A blocked sender fills the ring while rank 1 calls nothing: rank 1's
  // thread drains it into the unexpected queue.
  const size_t size = 2 * 1024 * 1024;
  std::vector<uint8_t> m = message(5, size);
  job[0].send(kKey, 0, 3, 1, m.data(), m.size());
  std::vector<uint8_t> got(size);
  Status st;
  job[1].recv(Match{kKey, 0, 3}, got.data(), got.size(), one(src), st);
  CHECK(is_message(got.data(), 5, size));

  // Truncation fails a nonblocking receive, status written.
  Pending t;
  uint8_t small[4];
  job[1].irecv(Match{kKey, 0, 4}, small, sizeof small, one(src), Report{t.status, t.op});
  job[0].send(kKey, 0, 4, 1, m.data(), 10);
  wait(job[1], t);
  CHECK(t.op->error == ErrorClass::TRUNCATE);
  CHECK_EQ(int(t.status[2]), 4);
  CHECK(is_message(small, 5, 4));
  CHECK_EQ(job[0].in_flight() + job[1].in_flight(), size_t(0));
}

// ---- 7. Failure --------------------------------------------------------------------

void test_failure() {
  g_context = "failure";
  Job job(3);
  std::atomic<int> completions{0};
  sink_into(job[0], completions);
  job[0].start_thread();
  uint32_t rank1 = 1;
  std::vector<uint32_t> peers = all_but(3, 0);
  Watch any{peers.data(), uint32_t(peers.size())};
  // What rank 1 sent before it went is still received.
  int32_t v = 5, got = 0;
  job[1].send(kKey, 1, 0, 0, &v, sizeof v);
  job.seg->header()->ranks[1].exited.store(1);
  Status st;
  job[0].recv(Match{kKey, 1, 0}, &got, sizeof got, one(rank1), st);
  CHECK_EQ(got, 5);
  EXPECT_ERROR(PROC_FAILED, "rank 1 has exited", [&] { job[0].recv(Match{kKey, 1, 0}, &got, sizeof got, one(rank1), st); });
  EXPECT_ERROR(PROC_FAILED, "rank 1 has exited", [&] { job[0].probe(Match{kKey, 1, 0}, one(rank1)); });
  // Nonblocking: the progress thread fails it.
  Pending r;
  job[0].irecv(Match{kKey, 1, 0}, &got, sizeof got, one(rank1), Report{r.status, r.op});
  wait(job[0], r);
  CHECK(r.op->error == ErrorClass::PROC_FAILED);
  CHECK(r.op->message.find("irecv") == std::string::npos);  // named as a receive
  // ANY_SOURCE waits while rank 2 may still send...
  Pending a;
  job[0].irecv(Match{kKey, kAnySource, 1}, &got, sizeof got, any, Report{a.status, a.op});
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(!done(a));
  v = 6;
  job[2].send(kKey, 2, 1, 0, &v, sizeof v);
  wait(job[0], a);
  CHECK(a.op->error == ErrorClass::SUCCESS);
  CHECK_EQ(got, 6);
  CHECK_EQ(int(a.status[0]), 2);
  // ...and fails once nobody can.
  job.seg->header()->ranks[2].exited.store(1);
  EXPECT_ERROR(PROC_FAILED, "no rank that could send", [&] {
    job[0].recv(Match{kKey, kAnySource, kAnyTag}, &got, sizeof got, any, st);
  });
  CHECK_EQ(job[0].in_flight(), size_t(0));
}

}  // namespace

int main() {
  test_order();
  test_matching();
  test_truncation();
  test_fragments();
  test_probes();
  test_nonblocking();
  test_failure();
  return test::summary("p2p_test");
}
