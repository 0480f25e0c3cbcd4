// The progress engine: each communicator with nonblocking or persistent
// operations gets a Lane, an ordered queue run by a worker thread of its
// own, so that operations on one communicator complete in initiation order
// while different communicators progress independently (one shared thread
// could deadlock two ranks that use two communicators in different orders).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"

namespace nodempi::progress {

// One queued collective. `body` runs the blocking algorithm of the core on
// whichever thread executes the lane.
struct Op {
  enum State : int { QUEUED = 0, RUNNING = 1, DONE = 2 };
  uint64_t id = 0;
  std::function<void()> body;
  std::atomic<int> state{QUEUED};
  ErrorClass error = ErrorClass::SUCCESS;  // valid once DONE
  std::string message;
};

// A counter that a thread can sleep on until it changes: the main thread
// sleeps on it in wait(), and is woken by completions and by requests to run
// JavaScript on its behalf.
class Signal {
 public:
  uint32_t value() const { return word_.load(std::memory_order_acquire); }
  void raise();
  // Sleeps until value() != seen, or `timeout_ns` passes.
  void wait(uint32_t seen, long timeout_ns);

 private:
  std::atomic<uint32_t> word_{0};
  std::atomic<uint32_t> sleepers_{0};
};

class Lane {
 public:
  // `on_done` runs on the executing thread after each operation completes.
  explicit Lane(std::function<void(const std::shared_ptr<Op>&)> on_done);
  ~Lane();  // finishes what is queued, then joins the worker (only when !busy())

  // Queues op. With wake = false the worker is not woken yet: the op runs
  // when the main thread waits for it, or at the next kick(); this saves
  // waking a thread (microseconds) for small operations that are waited for
  // at once.
  void submit(std::shared_ptr<Op> op, bool wake = true);
  // Wakes the worker if operations are queued.
  void kick();
  // True when nothing is queued or running: a blocking collective may run
  // directly on the calling thread, which then holds the lane (see below).
  bool try_run_direct(std::unique_lock<std::mutex>& hold);
  // Runs queued operations on the calling thread, in order, up to `target`,
  // if no other thread is executing the lane. Returns whether target is done.
  bool help(const Op* target);
  // True while operations are queued or running.
  bool busy() const { return pending_.load(std::memory_order_acquire) != 0; }

 private:
  void worker();
  bool run_next();  // pops and runs the head; caller holds run_mu_

  std::function<void(const std::shared_ptr<Op>&)> on_done_;
  std::mutex mu_;                   // guards queue_ and stop_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Op>> queue_;
  bool stop_ = false;
  bool asleep_ = false;             // the worker waits on cv_ (guarded by mu_)
  bool kicked_ = false;             // the worker may run what is queued (mu_)
  std::mutex run_mu_;               // held by whoever executes operations
  std::atomic<uint32_t> pending_{0};  // queued + running
  std::thread thread_;
};

}  // namespace nodempi::progress
