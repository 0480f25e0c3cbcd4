// Unit test of the progress lanes (native/core/progress) without Node: the
// queue a communicator's nonblocking operations run from, executed by the
// lane's worker thread or by a thread that helps (the main thread in
// wait()), and the Signal the main thread sleeps on.
//
// What it covers:
//   1. Signal: raise wakes a sleeper; a wait with nothing raised times out;
//   2. operations run in submission order, once each, on_done after each;
//   3. submit(wake = false) leaves the worker asleep until kick();
//   4. help(): runs up to the target on the calling thread, refuses while
//      another thread executes the lane;
//   5. try_run_direct(): only with nothing queued or running, and holds the
//      lane (the worker waits) until released;
//   6. errors: CoreError keeps its class, other exceptions become INTERN,
//      the lane goes on;
//   7. shutdown drains what is queued, kicked or not;
//   8. all of it at once from several threads: submitters, a kicker, a
//      helper, a thread running direct calls; no two operations ever
//      overlap, per-submitter order holds, nothing runs twice or is lost;
//   9. the main thread's wait loop (help, then sleep on the Signal) beside
//      the worker, as core/progress/engine.cc runs it.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/progress/lane.h"

using namespace nodempi;
using namespace nodempi::progress;
using nodempi::test::g_context;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::shared_ptr<Op> make_op(uint64_t id, std::function<void()> body) {
  auto op = std::make_shared<Op>();
  op->id = id;
  op->body = std::move(body);
  return op;
}

// Waits for op as core/progress/engine.cc's wait_done does: help, else sleep on
// the signal until something completes.
void wait_done(Lane& lane, Signal& signal, const Op* op) {
  for (;;) {
    uint32_t seen = signal.value();
    if (lane.help(op)) return;
    if (op->state.load(std::memory_order_acquire) == Op::DONE) return;
    signal.wait(seen, 1000 * 1000);
  }
}

// What ran, in order, with a check that no two operations overlap.
struct Log {
  std::mutex mu;
  std::vector<uint64_t> ids;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};

  void enter(uint64_t id) {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    {
      std::lock_guard<std::mutex> lk(mu);
      ids.push_back(id);
    }
    inside.fetch_sub(1);
  }
};

// ---- 1. Signal ------------------------------------------------------------------

void test_signal() {
  g_context = "signal";
  Signal s;
  uint32_t v0 = s.value();
  s.wait(v0, 1000 * 1000);  // nothing raised: returns after the timeout
  CHECK_EQ(s.value(), v0);
  s.raise();
  CHECK_EQ(s.value(), v0 + 1);
  s.wait(v0, 60L * 1000 * 1000 * 1000);  // already changed: returns at once

  std::atomic<bool> woke{false};
  uint32_t seen = s.value();
  std::thread sleeper([&] {
    while (s.value() == seen) s.wait(seen, 5L * 1000 * 1000 * 1000);
    woke.store(true);
  });
  sleep_ms(5);
  s.raise();
  sleeper.join();
  CHECK(woke.load());
}

// ---- 2. Order ----------------------------------------------------------------

void test_order() {
  g_context = "order";
  Log log;
  Signal signal;
  std::atomic<int> done{0};
  std::thread::id worker_id;
  std::mutex id_mu;
  {
    Lane lane([&](const std::shared_ptr<Op>& op) {
      CHECK(op->state.load() == Op::DONE);
      done.fetch_add(1);
      signal.raise();
    });
    CHECK(!lane.busy());
    std::vector<std::shared_ptr<Op>> ops;
    const int n = test::long_form() ? 5000 : 500;
    for (int i = 0; i < n; ++i) {
      ops.push_back(make_op(uint64_t(i), [&, i] {
        log.enter(uint64_t(i));
        std::lock_guard<std::mutex> lk(id_mu);
        worker_id = std::this_thread::get_id();
      }));
      lane.submit(ops.back());
    }
    while (done.load() < n) {
      uint32_t seen = signal.value();
      if (done.load() < n) signal.wait(seen, 1000 * 1000);
    }
    CHECK(!lane.busy());
    CHECK_EQ(log.ids.size(), size_t(n));
    for (int i = 0; i < n && i < int(log.ids.size()); ++i) CHECK_EQ(log.ids[size_t(i)], uint64_t(i));
    for (auto& op : ops) CHECK(op->state.load() == Op::DONE && op->error == ErrorClass::SUCCESS);
    std::lock_guard<std::mutex> lk(id_mu);
    CHECK(worker_id != std::this_thread::get_id());  // nobody helped: the worker ran them
  }
  CHECK_EQ(log.overlaps.load(), 0);
}

// ---- 3. Submitting without waking -----------------------------------------------

void test_kick() {
  g_context = "submit without waking, then kick";
  std::atomic<int> ran{0};
  Lane lane([](const std::shared_ptr<Op>&) {});
  lane.kick();  // nothing queued: nothing happens
  std::vector<std::shared_ptr<Op>> ops;
  for (int i = 0; i < 3; ++i) {
    ops.push_back(make_op(uint64_t(i), [&] { ran.fetch_add(1); }));
    lane.submit(ops.back(), false);
  }
  CHECK(lane.busy());
  sleep_ms(30);
  CHECK_EQ(ran.load(), 0);  // the worker was never woken
  for (auto& op : ops) CHECK(op->state.load() == Op::QUEUED);
  lane.kick();
  while (ops.back()->state.load() != Op::DONE) std::this_thread::yield();
  CHECK_EQ(ran.load(), 3);
  while (lane.busy()) std::this_thread::yield();

  g_context = "a woken worker drains what is queued without a wake-up";
  auto block = std::make_shared<std::atomic<bool>>(true);
  auto first = make_op(10, [block] {
    while (block->load()) std::this_thread::yield();
  });
  lane.submit(first, true);
  while (first->state.load() != Op::RUNNING) std::this_thread::yield();
  auto second = make_op(11, [&] { ran.fetch_add(1); });
  lane.submit(second, false);
  block->store(false);
  while (second->state.load() != Op::DONE) std::this_thread::yield();
  CHECK_EQ(ran.load(), 4);
}

// ---- 4. help ----------------------------------------------------------------------

void test_help() {
  g_context = "help runs up to the target here";
  Log log;
  Lane lane([](const std::shared_ptr<Op>&) {});
  const auto me = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  std::vector<std::shared_ptr<Op>> ops;
  for (int i = 0; i < 6; ++i) {
    ops.push_back(make_op(uint64_t(i), [&, i] {
      if (std::this_thread::get_id() != me) elsewhere.fetch_add(1);
      log.enter(uint64_t(i));
    }));
    lane.submit(ops.back(), false);
  }
  CHECK(lane.help(ops[2].get()));
  CHECK(ops[2]->state.load() == Op::DONE);
  CHECK(ops[3]->state.load() == Op::QUEUED);
  CHECK(lane.help(ops[1].get()));  // already done
  CHECK(lane.help(ops[5].get()));
  CHECK_EQ(elsewhere.load(), 0);
  CHECK(log.ids == std::vector<uint64_t>({0, 1, 2, 3, 4, 5}));
  CHECK(!lane.busy());

  g_context = "help refuses while the worker executes";
  auto block = std::make_shared<std::atomic<bool>>(true);
  auto running = make_op(20, [block] {
    while (block->load()) std::this_thread::yield();
  });
  auto next = make_op(21, [] {});
  lane.submit(running, true);
  lane.submit(next, false);
  while (running->state.load() != Op::RUNNING) std::this_thread::yield();
  CHECK(!lane.help(next.get()));
  CHECK(!lane.help(running.get()));
  block->store(false);
  Signal unused;
  wait_done(lane, unused, next.get());
  CHECK(next->state.load() == Op::DONE);
}

// ---- 5. try_run_direct ----------------------------------------------------------

void test_direct() {
  g_context = "try_run_direct";
  std::atomic<int> ran{0};
  Lane lane([](const std::shared_ptr<Op>&) {});
  {
    std::unique_lock<std::mutex> hold;
    CHECK(lane.try_run_direct(hold));
    CHECK(hold.owns_lock());
    // While held, a woken worker cannot start anything.
    auto op = make_op(1, [&] { ran.fetch_add(1); });
    lane.submit(op, true);
    sleep_ms(20);
    CHECK_EQ(ran.load(), 0);
    CHECK(op->state.load() == Op::QUEUED);
    // Something is queued: no second direct call (and none from here).
    std::unique_lock<std::mutex> again;
    CHECK(!lane.try_run_direct(again));
    CHECK(!again.owns_lock());
  }
  while (lane.busy()) std::this_thread::yield();
  CHECK_EQ(ran.load(), 1);
  // The worker holds the lane a moment longer than busy() says (on_done
  // runs after the count drops): a refusal then only sends the caller
  // through the queue, so retry until it has let go.
  std::unique_lock<std::mutex> hold;
  while (!lane.try_run_direct(hold)) std::this_thread::yield();
  CHECK(hold.owns_lock());
  hold.unlock();
  auto queued = make_op(2, [] {});
  lane.submit(queued, false);
  CHECK(!lane.try_run_direct(hold));
  CHECK(!hold.owns_lock());
  CHECK(lane.help(queued.get()));
  // help() ran it here: the lane is free at once.
  CHECK(lane.try_run_direct(hold));
}

// ---- 6. Errors ------------------------------------------------------------------

void test_errors() {
  g_context = "errors";
  std::atomic<int> completions{0};
  Lane lane([&](const std::shared_ptr<Op>&) { completions.fetch_add(1); });
  auto a = make_op(1, [] { throw CoreError(ErrorClass::NOT_SAME, "allreduce: ranks disagree"); });
  auto b = make_op(2, [] { throw std::runtime_error("bad_alloc or so"); });
  auto c = make_op(3, [] {});
  for (auto& op : {a, b, c}) lane.submit(op, false);
  CHECK(lane.help(c.get()));
  CHECK(a->error == ErrorClass::NOT_SAME && a->message == "allreduce: ranks disagree");
  CHECK(b->error == ErrorClass::INTERN && b->message == "bad_alloc or so");
  CHECK(c->error == ErrorClass::SUCCESS && c->message.empty());
  CHECK_EQ(completions.load(), 3);
}

// ---- 7. Shutdown --------------------------------------------------------------

void test_shutdown() {
  g_context = "shutdown drains the queue";
  Log log;
  std::atomic<int> completions{0};
  std::vector<std::shared_ptr<Op>> ops;
  {
    Lane lane([&](const std::shared_ptr<Op>&) { completions.fetch_add(1); });
    for (int i = 0; i < 20; ++i) {
      ops.push_back(make_op(uint64_t(i), [&, i] { log.enter(uint64_t(i)); }));
      lane.submit(ops.back(), i % 7 == 3);  // a few woken, most not
    }
  }
  CHECK_EQ(completions.load(), 20);
  CHECK_EQ(log.ids.size(), size_t(20));
  for (size_t i = 0; i < log.ids.size(); ++i) CHECK_EQ(log.ids[i], uint64_t(i));
  g_context = "shutdown of an idle lane";
  { Lane idle([](const std::shared_ptr<Op>&) {}); }
  { Lane never_used([](const std::shared_ptr<Op>&) {}); sleep_ms(1); }
}

// ---- 8. Several threads ---------------------------------------------------------

void test_threads() {
  g_context = "several threads";
  const int submitters = 3;
  const int per = test::long_form() ? 20000 : 2000;
  Log log;
  Signal signal;
  std::atomic<int> completions{0};
  std::atomic<int> directs{0};
  std::atomic<bool> stop{false};
  std::vector<std::vector<std::shared_ptr<Op>>> ops(submitters);
  std::mutex ops_mu;  // the helper reads what the submitters append
  {
    Lane lane([&](const std::shared_ptr<Op>&) {
      completions.fetch_add(1);
      signal.raise();
    });
    std::vector<std::thread> threads;
    for (int t = 0; t < submitters; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < per; ++i) {
          uint64_t id = uint64_t(t) << 32 | uint64_t(i);
          auto op = make_op(id, [&log, id] { log.enter(id); });
          {
            std::lock_guard<std::mutex> lk(ops_mu);
            ops[size_t(t)].push_back(op);
          }
          lane.submit(op, i % 5 == 0);
          if (i % 97 == 0) std::this_thread::yield();
        }
      });
    }
    std::thread kicker([&] {
      while (!stop.load()) {
        lane.kick();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    std::thread helper([&] {
      uint32_t k = 1;
      while (!stop.load()) {
        std::shared_ptr<Op> target;
        {
          std::lock_guard<std::mutex> lk(ops_mu);
          auto& list = ops[k % submitters];
          if (!list.empty()) target = list[(k * 7919u) % list.size()];
        }
        if (target) lane.help(target.get());
        ++k;
        std::this_thread::yield();
      }
    });
    std::thread direct([&] {
      while (!stop.load()) {
        std::unique_lock<std::mutex> hold;
        if (lane.try_run_direct(hold)) {
          log.enter(~uint64_t(0));
          directs.fetch_add(1);
        }
        std::this_thread::yield();
      }
    });
    for (int t = 0; t < submitters; ++t) threads[size_t(t)].join();
    // Wait for the last of each submitter as the main thread does.
    for (int t = 0; t < submitters; ++t) wait_done(lane, signal, ops[size_t(t)].back().get());
    for (auto& list : ops) {
      for (auto& op : list) wait_done(lane, signal, op.get());
    }
    stop.store(true);
    kicker.join();
    helper.join();
    direct.join();
    CHECK(!lane.busy());
  }
  const int total = submitters * per;
  CHECK_EQ(completions.load(), total);
  CHECK_EQ(log.overlaps.load(), 0);
  std::vector<int> next(submitters, 0);
  int seen = 0;
  for (uint64_t id : log.ids) {
    if (id == ~uint64_t(0)) continue;
    int t = int(id >> 32), i = int(id & 0xffffffffu);
    if (t >= submitters) {
      CHECK(t < submitters);
      continue;
    }
    if (i != next[size_t(t)]) {
      CHECK_EQ(i, next[size_t(t)]);
      break;
    }
    next[size_t(t)]++;
    ++seen;
  }
  CHECK_EQ(seen, total);
  for (auto& list : ops) {
    for (auto& op : list) CHECK(op->state.load() == Op::DONE);
  }
  std::printf("progress_test: %d operations from %d threads, %d direct calls between them\n", total, submitters,
              directs.load());
}

// ---- 9. The main thread's wait loop beside the worker ---------------------------

void test_wait_loop() {
  g_context = "wait loop";
  Signal signal;
  std::atomic<uint64_t> sum{0};
  const int n = test::long_form() ? 20000 : 2000;
  Lane lane([&](const std::shared_ptr<Op>&) { signal.raise(); });
  for (int i = 1; i <= n; ++i) {
    // Every third woken: the worker and this thread take turns.
    auto op = make_op(uint64_t(i), [&sum, i] { sum.fetch_add(uint64_t(i)); });
    lane.submit(op, i % 3 == 0);
    if (i % 4 == 0) wait_done(lane, signal, op.get());
    if (i == n) wait_done(lane, signal, op.get());
  }
  CHECK_EQ(sum.load(), uint64_t(n) * uint64_t(n + 1) / 2);
}

}  // namespace

int main() {
  test_signal();
  test_order();
  test_kick();
  test_help();
  test_direct();
  test_errors();
  test_shutdown();
  test_threads();
  test_wait_loop();
  return test::summary("progress_test");
}
