// Unit test of the progress engine (native/core/progress/engine.h) without
// Node: what napi/progress.cc relies on when it turns lib/'s requests into
// engine calls. This thread plays the main thread; bodies stand in for
// collectives.
//
// What it covers:
//   1. operations of one communicator run in initiation order, whoever runs
//      them (lane thread or the main thread in wait());
//   2. communicators progress independently: an operation that needs a later
//      one of another communicator completes;
//   3. test / wait / wait_any / drain: in flight, done, delivered once, and
//      the kept object handed back at delivery;
//   4. errors: CoreError keeps its class and message, other exceptions
//      become INTERN, the communicator stays usable, blocking calls too;
//   5. persistent templates started twice, and refused once freed; run as
//      blocking calls (run_template), the same one repeatedly, and none
//      once freed; dropped with their lane;
//   6. run_on_main from a lane thread, served by the main thread inside
//      wait(), and by service_mail() after the wake-up callback;
//   7. may_run_now: refused behind queued operations, then allowed;
//   8. settle: false while an operation cannot finish, true once it can;
//      it also starts operations nobody kicked;
//   9. retire_lane finishes what is queued, and the communicator can be
//      used again; shutdown refuses while an operation runs;
//  10. external requests (point-to-point): completed by another thread, or
//      by the hook that wait/wait_any/test/drain drive; delivered once with
//      their kept object, alongside lane requests.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/progress/engine.h"

using namespace nodempi;
using namespace nodempi::progress;
using nodempi::test::g_context;

namespace {

// A gate a body blocks on until the test opens it. The wait is bounded so
// that a broken engine fails the test instead of hanging it.
class Gate {
 public:
  void open() {
    std::lock_guard<std::mutex> lk(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool pass() {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, std::chrono::seconds(60), [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

struct Log {
  std::mutex mu;
  std::vector<int> order;
  void add(int v) {
    std::lock_guard<std::mutex> lk(mu);
    order.push_back(v);
  }
  std::vector<int> get() {
    std::lock_guard<std::mutex> lk(mu);
    return order;
  }
};

// ---- 1. Order per communicator --------------------------------------------

void test_order() {
  g_context = "order";
  Engine engine([] {});
  Log log;
  const int n = test::long_form() ? 5000 : 500;
  std::vector<uint64_t> ids;
  for (int i = 0; i < n; ++i) {
    // Some woken, some not: the lane thread and this thread take turns.
    ids.push_back(engine.submit(2, [&log, i] { log.add(i); }, i % 3 == 0));
    if (i % 7 == 0) engine.kick();
    if (i % 11 == 0) CHECK(engine.wait(ids.back()).done);
  }
  Completion last = engine.wait(ids.back());
  CHECK(last.done && last.error == ErrorClass::SUCCESS);
  std::vector<int> order = log.get();
  CHECK_EQ(order.size(), size_t(n));
  for (size_t i = 0; i < order.size(); ++i) CHECK_EQ(order[i], int(i));
  // The requests not waited for are still owed, until drain() delivers them.
  CHECK(engine.has_requests());
  std::vector<Completion> rest;
  engine.drain(rest);
  CHECK(!engine.has_requests());
  CHECK(!rest.empty());
  for (const Completion& c : rest) CHECK(c.done && c.error == ErrorClass::SUCCESS);
}

// ---- 2. Independence across communicators ---------------------------------

void test_independent() {
  g_context = "independent";
  Engine engine([] {});
  Gate gate;
  std::atomic<bool> passed{false};
  // Comm 3's operation waits for comm 4's, queued after it: one thread for
  // both communicators would never get there.
  uint64_t a = engine.submit(3, [&] { passed.store(gate.pass()); }, true);
  uint64_t b = engine.submit(4, [&] { gate.open(); }, true);
  CHECK(engine.wait(a).done);
  CHECK(engine.wait(b).done);
  CHECK(passed.load());
}

// ---- 3. test / wait / wait_any / drain ------------------------------------

void test_completion() {
  g_context = "completion";
  Engine engine([] {});
  Gate gate;
  auto kept = std::make_shared<int>(7);
  std::atomic<bool> started{false};
  uint64_t blocked = engine.submit(5, [&] {
    started.store(true);
    gate.pass();
  }, true, kept);
  // On its lane's thread, so that no wait below runs it here.
  while (!started.load()) std::this_thread::yield();
  uint64_t quick = engine.submit(6, [] {}, false);
  CHECK_EQ(kept.use_count(), 2L);
  CHECK(!engine.test(blocked).done);
  // quick is unkicked; test() kicks, so it completes on its lane's thread.
  while (!engine.test(quick).done) {
  }
  CHECK(engine.test(quick).done);  // delivered: reads as done, no error
  // wait_any returns the completed one without delivering it.
  uint64_t second = engine.submit(6, [] {}, false);
  CHECK_EQ(engine.wait_any({blocked, second}), size_t(1));
  CHECK(engine.has_requests());
  Completion s = engine.wait(second);
  CHECK(s.done && s.id == second && s.error == ErrorClass::SUCCESS);
  CHECK(!s.keep);
  gate.open();
  Completion c = engine.wait(blocked);
  CHECK(c.done && c.id == blocked && c.error == ErrorClass::SUCCESS);
  CHECK(c.keep.get() == kept.get());
  c.keep.reset();
  CHECK_EQ(kept.use_count(), 1L);  // the engine let go at delivery
  CHECK(!engine.has_requests());
  // drain() delivers each completed request once.
  uint64_t x = engine.submit(7, [] {}, true);
  uint64_t y = engine.submit(8, [] {}, true);
  CHECK_EQ(engine.wait_any({x}), size_t(0));
  CHECK_EQ(engine.wait_any({y}), size_t(0));
  std::vector<Completion> got;
  engine.drain(got);
  CHECK_EQ(got.size(), size_t(2));
  got.clear();
  engine.drain(got);
  CHECK_EQ(got.size(), size_t(0));
}

// ---- 4. Errors ------------------------------------------------------------

void test_errors() {
  g_context = "errors";
  Engine engine([] {});
  uint64_t bad = engine.submit(2, [] { throw CoreError(ErrorClass::NOT_SAME, "peers disagree"); }, false);
  uint64_t odd = engine.submit(2, [] { throw std::runtime_error("not a core error"); }, true);
  std::atomic<bool> ran{false};
  uint64_t after = engine.submit(2, [&] { ran.store(true); }, false);
  Completion b = engine.wait(bad);
  CHECK(b.error == ErrorClass::NOT_SAME);
  CHECK(b.message == "peers disagree");
  Completion o = engine.wait(odd);
  CHECK(o.error == ErrorClass::INTERN);
  CHECK(o.message == "not a core error");
  CHECK(engine.wait(after).error == ErrorClass::SUCCESS);
  CHECK(ran.load());
  // A blocking call queued behind another reports its error the same way.
  Gate gate;
  uint64_t first = engine.submit(2, [&] { gate.pass(); }, true);
  std::unique_lock<std::mutex> hold;
  CHECK(!engine.may_run_now(2, hold));
  gate.open();
  Completion blk = engine.run_blocking(2, [] { throw CoreError(ErrorClass::PROC_FAILED, "rank 1 died"); });
  CHECK(blk.done && blk.error == ErrorClass::PROC_FAILED && blk.message == "rank 1 died");
  CHECK(engine.test(first).done);
}

// ---- 5. Persistent templates ----------------------------------------------

void test_templates() {
  g_context = "templates";
  Engine engine([] {});
  std::atomic<int> runs{0};
  auto kept = std::make_shared<int>(1);
  uint64_t t = engine.add_template(3, [&] { runs.fetch_add(1); }, false, kept);
  CHECK_EQ(runs.load(), 0);  // stored, not run
  uint64_t r1 = engine.start(t);
  Completion c1 = engine.wait(r1);
  uint64_t r2 = engine.start(t);
  CHECK(r2 != r1 && r2 != t && r1 != t);
  Completion c2 = engine.wait(r2);
  CHECK(c1.done && c2.done && c1.error == ErrorClass::SUCCESS && c2.error == ErrorClass::SUCCESS);
  CHECK_EQ(runs.load(), 2);
  CHECK(c1.keep.get() == kept.get() && c2.keep.get() == kept.get());
  c1.keep.reset();
  c2.keep.reset();
  engine.free_template(t);
  CHECK_EQ(engine.start(t), uint64_t(0));
  CHECK_EQ(kept.use_count(), 1L);
  CHECK_EQ(runs.load(), 2);

  // run_template: a template run as a blocking call (lib/'s repeated
  // blocking calls), in place on an idle lane and behind queued work
  // otherwise, errors reported; retiring the lane drops its templates.
  std::vector<int> order;
  uint64_t rt = engine.add_template(4, [&] { order.push_back(2); }, false);
  Completion direct = engine.run_template(rt);
  CHECK(direct.done && direct.id == rt && direct.error == ErrorClass::SUCCESS);
  CHECK(order == std::vector<int>{2});
  uint64_t queued = engine.submit(4, [&] { order.push_back(1); }, false);
  Completion behind = engine.run_template(rt);
  CHECK(behind.done && behind.error == ErrorClass::SUCCESS);
  CHECK((order == std::vector<int>{2, 1, 2}));
  CHECK(engine.test(queued).done);
  uint64_t bad = engine.add_template(4, [] { throw CoreError(ErrorClass::NOT_SAME, "ranks differ"); }, false);
  Completion failed = engine.run_template(bad);
  CHECK(failed.done && failed.error == ErrorClass::NOT_SAME && failed.message == "ranks differ");
  // The same template again and again, two in turn, then gone once freed,
  // or once its lane retires; a template that takes a freed one's place
  // is never found by the freed one's id.
  uint64_t again = engine.add_template(4, [&] { order.push_back(3); }, false);
  CHECK(engine.run_template(again).done && engine.run_template(again).done);
  CHECK(engine.run_template(rt).done && engine.run_template(again).done);
  CHECK((order == std::vector<int>{2, 1, 2, 3, 3, 2, 3}));
  engine.free_template(again);
  CHECK_EQ(engine.run_template(again).id, uint64_t(0));
  uint64_t reused = engine.add_template(4, [&] { order.push_back(4); }, false);
  CHECK(reused != again);
  CHECK_EQ(engine.run_template(again).id, uint64_t(0));
  CHECK_EQ(engine.start(again), uint64_t(0));
  engine.free_template(again);  // a stale id frees nothing
  CHECK(engine.run_template(reused).done);
  CHECK((order == std::vector<int>{2, 1, 2, 3, 3, 2, 3, 4}));
  engine.free_template(reused);
  CHECK(engine.run_template(rt).done && engine.run_template(rt).done);
  engine.retire_lane(4);
  CHECK_EQ(engine.run_template(rt).id, uint64_t(0));
  CHECK_EQ(engine.start(bad), uint64_t(0));
  uint64_t never_ran = engine.add_template(9, [] {}, false);
  engine.retire_lane(9);  // a communicator that never queued anything
  CHECK_EQ(engine.start(never_ran), uint64_t(0));
}

// ---- 6. run_on_main -------------------------------------------------------

void test_run_on_main() {
  g_context = "run_on_main";
  std::atomic<int> wakes{0};
  Engine engine([&] { wakes.fetch_add(1); });
  const std::thread::id main_id = std::this_thread::get_id();
  CHECK(engine.on_main_thread());

  // Served inside wait(): the lane thread has the op (so wait() cannot run
  // it here) and asks the main thread for a call.
  std::atomic<bool> started{false};
  std::atomic<bool> body_on_main{true};
  std::thread::id served_on;
  int result = 0;
  uint64_t id = engine.submit(2, [&] {
    body_on_main.store(engine.on_main_thread());
    started.store(true);
    engine.run_on_main([&] {
      served_on = std::this_thread::get_id();
      result = 42;
    });
  }, true);
  while (!started.load()) std::this_thread::yield();
  Completion c = engine.wait(id);
  CHECK(c.done && c.error == ErrorClass::SUCCESS);
  CHECK(!body_on_main.load());
  CHECK(served_on == main_id);
  CHECK_EQ(result, 42);
  CHECK(wakes.load() >= 1);

  // Served by service_mail(), as the binding does when woken: the event
  // loop is not inside wait().
  int before = wakes.load();
  std::atomic<bool> answered{false};
  std::atomic<int> served{0};
  uint64_t id2 = engine.submit(3, [&] {
    engine.run_on_main([&] { served.fetch_add(1); });
    answered.store(true);
  }, true);
  while (!answered.load()) {
    if (wakes.load() > before) engine.service_mail();
    std::this_thread::yield();
  }
  CHECK_EQ(served.load(), 1);
  CHECK(engine.wait(id2).done);

  // On the main thread run_on_main just runs the call.
  bool here = false;
  engine.run_on_main([&] { here = true; });
  CHECK(here);
}

// ---- 7. may_run_now -------------------------------------------------------

void test_may_run_now() {
  g_context = "may_run_now";
  Engine engine([] {});
  {
    std::unique_lock<std::mutex> hold;
    CHECK(engine.may_run_now(9, hold));  // no lane yet
  }
  uint64_t queued = engine.submit(2, [] {}, false);
  {
    std::unique_lock<std::mutex> hold;
    CHECK(!engine.may_run_now(2, hold));  // behind a queued operation
    CHECK(!hold.owns_lock());
  }
  {
    std::unique_lock<std::mutex> hold;
    CHECK(engine.may_run_now(3, hold));  // another communicator
  }
  CHECK(engine.wait(queued).done);
  // The lane's thread lets go of the lane just after the operation shows
  // done (it delivers it first), so may_run_now() can say no for that
  // moment; a loaded machine can stretch it.
  std::unique_lock<std::mutex> hold;
  bool may = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(may = engine.may_run_now(2, hold)) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  CHECK(may);
  CHECK(hold.owns_lock());  // the lane is held: its thread waits
}

// ---- 8. settle ------------------------------------------------------------

void test_settle() {
  g_context = "settle";
  Engine engine([] {});
  Gate gate;
  uint64_t stuck = engine.submit(2, [&] { gate.pass(); }, true);
  CHECK(!engine.settle(20));
  gate.open();
  CHECK(engine.settle(60 * 1000));
  CHECK(engine.test(stuck).done);
  // Never kicked: settle() starts it.
  std::atomic<bool> ran{false};
  uint64_t lazy = engine.submit(3, [&] { ran.store(true); }, false);
  CHECK(engine.settle(60 * 1000));
  CHECK(ran.load());
  CHECK(engine.test(lazy).done);
}

// ---- 9. retire_lane and shutdown ------------------------------------------

void test_retire() {
  g_context = "retire";
  Engine engine([] {});
  Log log;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(engine.submit(4, [&log, i] { log.add(i); }, false));
  engine.retire_lane(4);
  std::vector<int> order = log.get();
  CHECK_EQ(order.size(), size_t(10));
  for (size_t i = 0; i < order.size(); ++i) CHECK_EQ(order[i], int(i));
  for (uint64_t id : ids) CHECK(engine.test(id).done);
  engine.retire_lane(4);   // nothing left: no-op
  engine.retire_lane(77);  // never used
  uint64_t again = engine.submit(4, [&log] { log.add(10); }, true);
  CHECK(engine.wait(again).done);
  CHECK_EQ(log.get().size(), size_t(11));

  Gate gate;
  std::atomic<int> wakes{0};
  Engine busy([&] { wakes.fetch_add(1); });
  uint64_t stuck = busy.submit(2, [&] { gate.pass(); }, true);
  CHECK(!busy.shutdown());
  gate.open();
  CHECK(busy.settle(60 * 1000));
  CHECK_EQ(wakes.load(), 0);  // shut down: no more wake-ups
  CHECK(busy.test(stuck).done);
  CHECK(busy.shutdown());
}

// ---- 10. External requests ------------------------------------------------

void test_external() {
  g_context = "external";
  std::atomic<int> wakes{0};
  Engine engine([&] { wakes.fetch_add(1); });
  // Completed by another thread; no hook: wait() sleeps on the signal.
  auto kept = std::make_shared<int>(3);
  std::shared_ptr<Op> a = engine.add_external(kept);
  CHECK(engine.has_requests());
  CHECK(!engine.test(a->id).done);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    a->error = ErrorClass::TRUNCATE;
    a->message = "recv: too long";
    engine.complete_external(a);
  });
  Completion ca = engine.wait(a->id);
  t.join();
  CHECK(ca.done && ca.error == ErrorClass::TRUNCATE && ca.message == "recv: too long");
  CHECK(ca.keep.get() == kept.get());
  CHECK(ca.external);
  CHECK(wakes.load() >= 1);  // completed off the main thread: the loop is woken
  CHECK(!engine.has_requests());

  // A hook: wait() and test() drive it; op null is a poll.
  std::vector<std::shared_ptr<Op>> ready;
  int polls = 0, waits = 0;
  engine.set_external_hook([&](const Op* op, uint64_t since) {
    CHECK(op == nullptr || since > 0);
    if (op) ++waits;
    else ++polls;
    // Every third call completes what is ready (as progress would).
    if ((polls + waits) % 3 == 0) {
      for (auto& r : ready) engine.complete_external(r);
      ready.clear();
    }
  });
  std::shared_ptr<Op> b = engine.add_external();
  ready.push_back(b);
  Completion cb = engine.wait(b->id);
  CHECK(cb.done && cb.error == ErrorClass::SUCCESS);
  CHECK(waits >= 1);
  std::shared_ptr<Op> c = engine.add_external();
  ready.push_back(c);
  int tests = 0;
  while (!engine.test(c->id).done) ++tests;
  CHECK(tests >= 1 && polls >= 1);

  // wait_any over a lane request that cannot finish yet and an external
  // one the hook completes; drain delivers the external one.
  Gate gate;
  std::atomic<bool> started{false};
  uint64_t lane_op = engine.submit(2, [&] {
    started.store(true);
    gate.pass();
  }, true);
  // On its lane's thread, so that wait_any does not run it here.
  while (!started.load()) std::this_thread::yield();
  std::shared_ptr<Op> d = engine.add_external();
  ready.push_back(d);
  CHECK_EQ(engine.wait_any({lane_op, d->id}), size_t(1));
  std::vector<Completion> out;
  engine.drain(out);
  CHECK_EQ(out.size(), size_t(1));
  CHECK(!out.empty() && out[0].id == d->id);
  gate.open();
  CHECK(engine.wait(lane_op).done);
  CHECK(!engine.has_requests());
  engine.set_external_hook({});
}

}  // namespace

int main() {
  test_order();
  test_independent();
  test_completion();
  test_errors();
  test_templates();
  test_run_on_main();
  test_may_run_now();
  test_settle();
  test_retire();
  test_external();
  return test::summary("engine_test");
}
