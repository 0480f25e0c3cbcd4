#include "core/progress/lane.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <exception>

namespace nodempi::progress {

void Signal::raise() {
  word_.fetch_add(1, std::memory_order_acq_rel);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
}

void Signal::wait(uint32_t seen, long timeout_ns) {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (word_.load(std::memory_order_seq_cst) == seen) {
    timespec ts{timeout_ns / 1000000000, timeout_ns % 1000000000};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0);
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

Lane::Lane(std::function<void(const std::shared_ptr<Op>&)> on_done)
    : on_done_(std::move(on_done)), thread_([this] { worker(); }) {}

Lane::~Lane() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Lane::submit(std::shared_ptr<Op> op, bool wake) {
  pending_.fetch_add(1, std::memory_order_acq_rel);
  bool notify;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(op));
    if (wake) kicked_ = true;
    notify = wake && asleep_;
  }
  if (notify) cv_.notify_one();
}

void Lane::kick() {
  bool notify;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (queue_.empty()) return;
    kicked_ = true;
    notify = asleep_;
  }
  if (notify) cv_.notify_one();
}

bool Lane::try_run_direct(std::unique_lock<std::mutex>& hold) {
  if (pending_.load(std::memory_order_acquire) != 0) return false;
  hold = std::unique_lock<std::mutex>(run_mu_, std::try_to_lock);
  if (!hold.owns_lock()) return false;
  // Nothing can be submitted concurrently: only the main thread submits,
  // and it is the caller.
  if (pending_.load(std::memory_order_acquire) != 0) {
    hold.unlock();
    return false;
  }
  return true;
}

bool Lane::run_next() {
  std::shared_ptr<Op> op;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (queue_.empty()) return false;
    op = std::move(queue_.front());
    queue_.pop_front();
  }
  op->state.store(Op::RUNNING, std::memory_order_release);
  try {
    op->body();
  } catch (const CoreError& e) {
    op->error = e.error_class();
    op->message = e.what();
  } catch (const std::exception& e) {
    op->error = ErrorClass::INTERN;
    op->message = e.what();
  }
  op->state.store(Op::DONE, std::memory_order_release);
  pending_.fetch_sub(1, std::memory_order_acq_rel);
  on_done_(op);
  return true;
}

bool Lane::help(const Op* target) {
  if (target->state.load(std::memory_order_acquire) == Op::DONE) return true;
  std::unique_lock<std::mutex> run(run_mu_, std::try_to_lock);
  if (!run.owns_lock()) return false;
  while (target->state.load(std::memory_order_acquire) != Op::DONE) {
    if (!run_next()) break;
  }
  return target->state.load(std::memory_order_acquire) == Op::DONE;
}

// Once kicked, the worker drains the queue (including operations queued
// meanwhile without a wake-up), then sleeps until the next kick.
void Lane::worker() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (queue_.empty()) kicked_ = false;
      if (!kicked_ || queue_.empty()) {
        asleep_ = true;
        cv_.wait(lk, [&] { return stop_ || (kicked_ && !queue_.empty()); });
        asleep_ = false;
      }
      if (stop_ && queue_.empty()) return;
    }
    std::lock_guard<std::mutex> run(run_mu_);
    run_next();
  }
}

}  // namespace nodempi::progress
