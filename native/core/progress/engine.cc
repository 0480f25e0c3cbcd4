#include "core/progress/engine.h"

#include <sched.h>

#include <chrono>
#include <string>

#include "core/clock.h"

namespace nodempi::progress {

namespace {

bool is_done(const Op* op) { return op->state.load(std::memory_order_acquire) == Op::DONE; }

// `op` null: nothing to report (not finished, or delivered before).
Completion result(uint64_t id, bool done, const Op* op = nullptr) {
  Completion c;
  c.id = id;
  c.done = done;
  if (op) {
    c.error = op->error;
    c.message = op->message;
  }
  return c;
}

}  // namespace

Engine::Engine(std::function<void()> wake) : wake_(std::move(wake)) {}

Engine::~Engine() { lanes_.clear(); }

void Engine::completed() {
  // Completed on the main thread inside wait(): the caller sees it when
  // that call returns, no need to wake anyone.
  if (on_main_thread() && in_wait_) return;
  signal_.raise();
  if (waking_.load(std::memory_order_acquire) && wake_) wake_();
}

Lane& Engine::lane_of(uint32_t comm) {
  if (lanes_.size() <= comm) lanes_.resize(size_t(comm) + 1);
  if (!lanes_[comm]) {
    lanes_[comm] = std::make_unique<Lane>([this](const std::shared_ptr<Op>&) { completed(); });
  }
  return *lanes_[comm];
}

std::shared_ptr<Op> Engine::make_op(std::function<void()> body) {
  auto op = std::make_shared<Op>();
  op->id = next_id_++;
  op->body = std::move(body);
  return op;
}

uint64_t Engine::enqueue(uint32_t comm, std::shared_ptr<Op> op, bool wake, std::shared_ptr<void> keep) {
  const uint64_t id = op->id;
  pending_.emplace(id, Request{op, std::move(keep), comm});
  lane_of(comm).submit(std::move(op), wake);
  if (!wake) unkicked_ = true;
  return id;
}

uint64_t Engine::submit(uint32_t comm, std::function<void()> body, bool wake, std::shared_ptr<void> keep) {
  return enqueue(comm, make_op(std::move(body)), wake, std::move(keep));
}

std::shared_ptr<Op> Engine::add_external(std::shared_ptr<void> keep) {
  auto op = std::make_shared<Op>();
  op->id = next_id_++;
  op->state.store(Op::RUNNING, std::memory_order_relaxed);
  pending_.emplace(op->id, Request{op, std::move(keep), kExternal});
  return op;
}

void Engine::complete_external(const std::shared_ptr<Op>& op) {
  op->state.store(Op::DONE, std::memory_order_release);
  completed();
}

// The main thread waits for an external op: the hook drives its progress
// (and sleeps a little); calls progress threads hand over are served in
// between.
void Engine::wait_external(const Op* op) {
  const uint64_t since = now_ns();
  for (;;) {
    uint32_t seen = signal_.value();
    service_mail();
    if (is_done(op)) return;
    if (hook_) hook_(op, since);
    else signal_.wait(seen, 1000 * 1000);
    if (is_done(op)) return;
  }
}

uint64_t Engine::add_template(uint32_t comm, std::function<void()> body, bool wake, std::shared_ptr<void> keep) {
  return templates_.add(Template{comm, std::move(body), wake, std::move(keep)});
}

uint64_t Engine::start(uint64_t template_id) {
  const Template* t = templates_.find(template_id);
  if (!t) return 0;
  return enqueue(t->comm, make_op(t->body), t->wake, t->keep);
}

Completion Engine::run_template(uint64_t template_id) {
  const Template* found = templates_.find(template_id);
  if (!found) return {};
  // No template is added or freed while this one runs (its body runs no
  // JavaScript), so the reference stays valid.
  const Template& t = *found;
  std::unique_lock<std::mutex> hold;
  if (!may_run_now(t.comm, hold)) return run_blocking(t.comm, t.body);
  Completion c = result(template_id, true);
  try {
    t.body();
  } catch (const CoreError& e) {
    c.error = e.error_class();
    c.message = e.what();
  }
  return c;
}

void Engine::free_template(uint64_t template_id) {
  templates_.remove(template_id);
}

void Engine::kick(uint32_t except) {
  if (!unkicked_) return;
  unkicked_ = false;
  for (uint32_t c = 0; c < lanes_.size(); ++c) {
    if (!lanes_[c]) continue;
    if (c == except) {
      unkicked_ = true;  // still owed a kick if the main thread does not run it
      continue;
    }
    lanes_[c]->kick();
  }
}

bool Engine::may_run_now(uint32_t comm, std::unique_lock<std::mutex>& hold) {
  kick(comm);
  Lane* lane = comm < lanes_.size() ? lanes_[comm].get() : nullptr;
  return !lane || lane->try_run_direct(hold);
}

void Engine::service_mail() {
  for (;;) {
    MainCall* call;
    {
      std::lock_guard<std::mutex> lk(mail_mu_);
      if (mail_.empty()) return;
      call = mail_.front();
      mail_.pop_front();
    }
    // Answered even when fn throws: its thread must not wait forever. The
    // notify happens under the lock because the call lives on the waiting
    // thread's stack: once that thread sees done, the cv may be gone.
    struct Answer {
      MainCall* call;
      ~Answer() {
        std::lock_guard<std::mutex> lk(call->mu);
        call->done = true;
        call->cv.notify_one();
      }
    } answer{call};
    call->fn();
  }
}

void Engine::run_on_main(std::function<void()> fn) {
  if (on_main_thread()) {
    fn();
    return;
  }
  MainCall call;
  call.fn = std::move(fn);
  {
    std::lock_guard<std::mutex> lk(mail_mu_);
    mail_.push_back(&call);
  }
  signal_.raise();
  if (waking_.load(std::memory_order_acquire) && wake_) wake_();
  std::unique_lock<std::mutex> lk(call.mu);
  call.cv.wait(lk, [&] { return call.done; });
}

// Blocks the main thread until `op` is done, running it (and what precedes
// it on its lane) here when no progress thread is, and serving the calls
// progress threads ask the main thread for meanwhile.
void Engine::wait_done(Lane& lane, const Op* op) {
  for (;;) {
    uint32_t seen = signal_.value();
    if (lane.help(op)) return;
    service_mail();
    if (op->state.load(std::memory_order_acquire) == Op::DONE) return;
    signal_.wait(seen, 1000 * 1000);
  }
}

Completion Engine::deliver(std::unordered_map<uint64_t, Request>::iterator it) {
  Completion c = result(it->first, true, it->second.op.get());
  c.keep = std::move(it->second.keep);
  c.external = it->second.comm == kExternal;
  pending_.erase(it);
  return c;
}

Completion Engine::run_blocking(uint32_t comm, std::function<void()> body) {
  Lane& lane = lane_of(comm);
  auto op = make_op(std::move(body));
  lane.submit(op, false);
  wait_done(lane, op.get());
  return result(op->id, true, op.get());
}

Completion Engine::test(uint64_t id) {
  service_mail();
  auto it = pending_.find(id);
  if (it == pending_.end()) return result(id, true);
  if (it->second.comm == kExternal && hook_ && !is_done(it->second.op.get())) {
    hook_(nullptr, 0);
    // The hook runs no JavaScript and leaves pending_ alone: `it` stays valid.
  }
  if (it->second.op->state.load(std::memory_order_acquire) != Op::DONE) {
    kick();
    // A test() loop must not starve the thread doing the work when ranks
    // outnumber cores: give up the rest of this time slice (it returns at
    // once when no other thread wants the core).
    sched_yield();
    return result(id, false);
  }
  return deliver(it);
}

Completion Engine::wait(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return result(id, true);
  // Held here, not through `it`: the calls served while waiting run
  // JavaScript, which may deliver requests itself.
  std::shared_ptr<Op> op = it->second.op;
  const uint32_t comm = it->second.comm;
  kick(comm);
  in_wait_ = true;
  if (comm == kExternal) wait_external(op.get());
  else wait_done(lane_of(comm), op.get());
  in_wait_ = false;
  it = pending_.find(id);
  return it != pending_.end() ? deliver(it) : result(id, true, op.get());
}

size_t Engine::wait_any(const std::vector<uint64_t>& ids) {
  if (ids.empty()) return 0;
  kick();
  const uint64_t since = now_ns();
  for (;;) {
    uint32_t seen = signal_.value();
    service_mail();
    const Op* external = nullptr;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = pending_.find(ids[i]);
      if (it == pending_.end() || is_done(it->second.op.get())) return i;
      if (!external && it->second.comm == kExternal) external = it->second.op.get();
    }
    // Let the first request's lane run here if its thread is idle.
    auto it = pending_.find(ids[0]);
    if (it->second.comm != kExternal && lane_of(it->second.comm).help(it->second.op.get())) continue;
    // External requests progress here, a little at a time: a lane's
    // completion raises the signal, which the hook does not watch, so it
    // waits only about a millisecond per call.
    if (external && hook_) hook_(external, since);
    else signal_.wait(seen, 1000 * 1000);
  }
}

void Engine::drain(std::vector<Completion>& out) {
  service_mail();
  if (hook_) hook_(nullptr, 0);
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.op->state.load(std::memory_order_acquire) == Op::DONE) {
      auto next = std::next(it);
      out.push_back(deliver(it));
      it = next;
    } else {
      ++it;
    }
  }
}

void Engine::retire_lane(uint32_t comm) {
  templates_.each([&](uint64_t id, Template& t) {
    if (t.comm == comm) templates_.remove(id);
  });
  if (comm >= lanes_.size() || !lanes_[comm]) return;
  Lane& lane = *lanes_[comm];
  // A no-op behind everything, waited for, running the lane here if its
  // thread is idle.
  auto marker = std::make_shared<Op>();
  marker->body = [] {};
  lane.submit(marker);
  wait_done(lane, marker.get());
  lanes_[comm].reset();
}

bool Engine::settle(long timeout_ms) {
  for (auto& lane : lanes_) {
    if (lane) lane->kick();
  }
  unkicked_ = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    uint32_t seen = signal_.value();
    bool busy = false;
    for (auto& lane : lanes_) busy = busy || (lane && lane->busy());
    if (!busy) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    // Raised at every completion; the timeout bounds a missed one.
    signal_.wait(seen, 5 * 1000 * 1000);
  }
}

bool Engine::shutdown() {
  waking_.store(false, std::memory_order_release);
  for (auto& lane : lanes_) {
    if (lane && lane->busy()) return false;
  }
  lanes_.clear();
  return true;
}

}  // namespace nodempi::progress
