// transport::SlotSets without Node: which set a context gets, when a set
// goes back to another context, and that two holders never share one, with
// the ranks of one segment as threads (as thread mode maps it).
#include "core/transport/slot_sets.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/transport/segment.h"

using nodempi::transport::CtrlLine;
using nodempi::transport::kSets;
using nodempi::transport::Segment;
using nodempi::transport::SlotSets;

namespace {

constexpr uint32_t kWarm = SlotSets::kWarmSets;

// A job of `n` ranks: the launcher's mapping and each rank's own.
struct Job {
  std::unique_ptr<Segment> launcher;
  std::vector<std::unique_ptr<Segment>> ranks;
  explicit Job(uint32_t n) {
    std::string err;
    launcher.reset(Segment::create(n, &err));
    CHECK(launcher != nullptr);
    for (uint32_t r = 0; r < n; ++r) {
      ranks.emplace_back(Segment::attach(fcntl(launcher->fd(), F_DUPFD_CLOEXEC, 0), r, n, &err));
      CHECK(ranks.back() != nullptr);
    }
  }
};

// A context of `members` ranks (member 0 is rank 0) as rank `member` sees it.
SlotSets::Owner owner(Segment& seg, uint32_t ctx, uint32_t members, uint32_t member) {
  return {ctx, seg.header()->contexts_state[ctx].generation.load(), members, member};
}

// What rank 0's peer (member 1) has done in context ctx.
void peer_at(Segment& seg, uint32_t ctx, uint32_t seq, uint32_t done) {
  CtrlLine* line = seg.ctrl(ctx, 1);
  line->seq.store(seq);
  line->done.store(done);
}

void warm_sets_then_lru() {
  nodempi::test::g_context = "warm sets, then the least recently used";
  Job job(2);
  Segment& seg = *job.ranks[0];
  SlotSets& sets = *seg.sets();
  std::vector<uint32_t> ctx, held;
  for (uint32_t k = 0; k < kWarm + 8; ++k) ctx.push_back(uint32_t(seg.alloc_context(2)));
  // The first kWarm contexts each get a fresh set, whatever their readers do.
  for (uint32_t k = 0; k < kWarm; ++k) {
    uint32_t s = sets.hold(owner(seg, ctx[k], 2, 0), SlotSets::kNone);
    CHECK_EQ(s, k);
    sets.release(s, 10);  // posted up to phase 10
    held.push_back(s);
  }
  CHECK_EQ(sets.used(), kWarm);
  // Held again with its hint: the same set, no search.
  CHECK_EQ(sets.hold(owner(seg, ctx[3], 2, 0), held[3]), held[3]);
  sets.release(held[3], 11);
  // Readers of every context still at phase 10: nothing can be taken back,
  // a new context takes a fresh set.
  for (uint32_t k = 0; k < kWarm; ++k) peer_at(seg, ctx[k], 10, 9);
  uint32_t fresh = sets.hold(owner(seg, ctx[kWarm], 2, 0), SlotSets::kNone);
  CHECK_EQ(fresh, kWarm);
  sets.release(fresh, 0);
  // Context 0's reader has finished (done = 10): its set, the least recently
  // released, goes to the next new context.
  peer_at(seg, ctx[0], 10, 10);
  CHECK_EQ(sets.hold(owner(seg, ctx[kWarm + 1], 2, 0), SlotSets::kNone), held[0]);
  sets.release(held[0], 0);
  // Context 1's reader has posted a later phase: also done with it.
  peer_at(seg, ctx[1], 11, 9);
  CHECK_EQ(sets.hold(owner(seg, ctx[kWarm + 2], 2, 0), SlotSets::kNone), held[1]);
  sets.release(held[1], 0);
  // Context 0 comes back: its hint is gone, it gets another set.
  uint32_t again = sets.hold(owner(seg, ctx[0], 2, 0), held[0]);
  CHECK(again != held[0]);
  sets.release(again, 12);
  // A context freed by all and taken again: a set of its earlier use is free.
  peer_at(seg, ctx[2], 10, 9);  // the reader never finished...
  seg.release_context(ctx[2]);
  seg.release_context(ctx[2]);
  CHECK_EQ(uint32_t(seg.alloc_context(2)), ctx[2]);  // ...but the context moved on
  bool found = false;
  for (int i = 0; i < 8 && !found; ++i) {
    uint32_t s = sets.hold(owner(seg, ctx[kWarm + 3], 2, 0), SlotSets::kNone);
    found = s == held[2];
    sets.release(s, 0);
  }
  CHECK(found);
}

void busy_sets_stay() {
  nodempi::test::g_context = "a held set is never taken";
  Job job(2);
  Segment& seg = *job.ranks[0];
  SlotSets& sets = *seg.sets();
  std::vector<uint32_t> ctx;
  for (uint32_t k = 0; k <= kWarm; ++k) ctx.push_back(uint32_t(seg.alloc_context(2)));
  std::vector<uint32_t> held;
  for (uint32_t k = 0; k < kWarm; ++k) held.push_back(sets.hold(owner(seg, ctx[k], 2, 0), SlotSets::kNone));
  // Every reader done, but every set held: a fresh one.
  for (uint32_t k = 0; k < kWarm; ++k) peer_at(seg, ctx[k], 100, 100);
  CHECK_EQ(sets.hold(owner(seg, ctx[kWarm], 2, 0), SlotSets::kNone), kWarm);
}

// Threads of one rank hold and release sets of many contexts at once while
// stealing from each other; a set is never held twice at the same time.
void threads_never_share() {
  nodempi::test::g_context = "threads never share a set";
  Job job(2);
  Segment& seg = *job.ranks[0];
  SlotSets& sets = *seg.sets();
  constexpr uint32_t kThreads = 4, kPerThread = 40;
  std::vector<uint32_t> ctx;
  for (uint32_t k = 0; k < kThreads * kPerThread; ++k) {
    ctx.push_back(uint32_t(seg.alloc_context(2)));
    peer_at(seg, ctx.back(), 1u << 30, 1u << 30);  // readers always done
  }
  std::unique_ptr<std::atomic<int>[]> in_use(new std::atomic<int>[kSets]);
  for (uint32_t s = 0; s < kSets; ++s) in_use[s] = 0;
  const int rounds = nodempi::test::long_form() ? 20000 : 2000;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint32_t> hint(kPerThread, SlotSets::kNone);
      for (int i = 0; i < rounds; ++i) {
        uint32_t k = uint32_t(i * 7 + t) % kPerThread;
        uint32_t s = sets.hold(owner(seg, ctx[t * kPerThread + k], 2, 0), hint[k]);
        if (in_use[s].fetch_add(1) != 0) CHECK(!"a set held twice at once");
        hint[k] = s;
        in_use[s].fetch_sub(1);
        sets.release(s, uint32_t(i));
      }
    });
  }
  for (auto& th : threads) th.join();
  // More contexts than warm sets, readers always done: sets were reused.
  CHECK(sets.used() <= kWarm + kThreads * 8);
}

}  // namespace

int main() {
  warm_sets_then_lru();
  busy_sets_stay();
  threads_never_share();
  return nodempi::test::summary("slot_sets_test");
}
