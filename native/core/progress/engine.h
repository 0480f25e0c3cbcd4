// The progress engine of one rank (one Node environment), without Node:
// a lane per communicator, the nonblocking requests and persistent
// templates by id, and the mailbox through which progress threads have the
// main thread make calls for them (user ops are JavaScript). The binding
// (napi/progress.cc) turns arguments into bodies and results into values;
// everything about ordering, waiting and waking lives here, so that it can
// be tested and sanitised without Node (test/native/engine_test.cc).
//
// Besides the lanes' operations, the engine holds "external" requests
// (point-to-point messages): they belong to no lane, something else
// completes them, and while the main thread waits for one it drives that
// something through a hook, so test/wait/wait_any/drain serve both kinds.
//
// Threads: the thread that constructs the engine is its main thread, and
// every member function is for it, except on_main_thread(), run_on_main()
// and complete_external(), which any thread may call.
#pragma once
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/handles.h"
#include "core/progress/lane.h"

namespace nodempi::progress {

// What test(), wait(), drain() or run_blocking() found.
struct Completion {
  uint64_t id = 0;
  bool done = false;  // false: still queued or running
  ErrorClass error = ErrorClass::SUCCESS;
  std::string message;
  // What submit() or add_template() was given to keep alive, handed back
  // once the request is delivered: the caller releases it on the main
  // thread (a user op holds JavaScript references).
  std::shared_ptr<void> keep;
  // An external request (add_external): `keep` is whatever its owner
  // passed, not a lane operation's.
  bool external = false;
};

class Engine {
 public:
  // `wake` runs on any thread whenever the main thread has work: an
  // operation completed, or a progress thread waits in run_on_main(). The
  // binding wakes the event loop with it; it is not called for completions
  // the main thread sees itself inside wait().
  explicit Engine(std::function<void()> wake);
  // Finishes what the lanes hold and joins their threads: only when no
  // operation is stuck (shutdown() says whether one is).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  bool on_main_thread() const { return std::this_thread::get_id() == main_; }

  // Queues a nonblocking operation on communicator `comm`; returns its
  // request id. With wake = false its lane's thread is not woken until the
  // next kick() (or a wait() runs it on the main thread): small requests
  // waited for at once spare a thread wake-up.
  uint64_t submit(uint32_t comm, std::function<void()> body, bool wake, std::shared_ptr<void> keep = {});
  // An external request: registered, not run; whoever owns its work sets
  // its error and message and calls complete_external(). The op's id is
  // the request id.
  std::shared_ptr<Op> add_external(std::shared_ptr<void> keep = {});
  // Any thread: marks an external op done (error and message set before)
  // and wakes whoever waits for it.
  void complete_external(const std::shared_ptr<Op>& op);
  // What drives external requests from the main thread. With op null: one
  // round of progress, no waiting (test, drain). Otherwise: progress, and
  // wait a little (at most about a millisecond) for op to complete;
  // `since_ns` (CLOCK_MONOTONIC) is when the caller began waiting, so the
  // hook can spin first and sleep later. Without a hook the main thread
  // sleeps until a completion is signalled.
  using ExternalHook = std::function<void(const Op* op, uint64_t since_ns)>;
  void set_external_hook(ExternalHook hook) { hook_ = std::move(hook); }

  // A persistent request: stored, not run; returns its template id.
  uint64_t add_template(uint32_t comm, std::function<void()> body, bool wake, std::shared_ptr<void> keep = {});
  // Queues a new round of a template; returns its request id, or 0 when the
  // template was freed.
  uint64_t start(uint64_t template_id);
  // Runs a template once as a blocking collective: in place when
  // may_run_now() allows, else behind the operations queued on its
  // communicator. lib/ repeats an unchanged blocking call this way (an
  // implicit persistent request). Returns a Completion with id 0 when the
  // template was freed (or its communicator retired).
  Completion run_template(uint64_t template_id);
  void free_template(uint64_t template_id);

  // True when a blocking collective on `comm` may run on the calling thread
  // now (nothing of it queued or running); `hold` then keeps its lane until
  // released. Kicks the other lanes first: a peer may need one of their
  // operations to reach this collective. Allocates nothing.
  bool may_run_now(uint32_t comm, std::unique_lock<std::mutex>& hold);
  // A blocking collective that may not run now: queued behind the
  // communicator's operations and waited for.
  Completion run_blocking(uint32_t comm, std::function<void()> body);

  // Never blocks. An id not in flight (delivered already) reads as done
  // without error. A completed request is delivered: its id is forgotten.
  Completion test(uint64_t id);
  // Blocks until the request completes, running its lane here when no
  // thread is and serving run_on_main() calls meanwhile; delivers it.
  Completion wait(uint64_t id);
  // Blocks until one of `ids` has completed (or is not in flight); returns
  // its index without delivering it. `ids` must not be empty.
  size_t wait_any(const std::vector<uint64_t>& ids);
  // Delivers every request that has completed, appending it to `out`.
  void drain(std::vector<Completion>& out);
  // Requests queued or undelivered: while there are, the binding keeps the
  // event loop alive.
  bool has_requests() const { return !pending_.empty(); }
  // Wakes the threads of lanes holding operations not yet started, except
  // the lane of `except`.
  void kick(uint32_t except = UINT32_MAX);

  // From a progress thread: has the main thread run fn (in wait(),
  // wait_any(), test(), drain() or service_mail()) and returns when it
  // has. On the main thread, runs fn at once.
  void run_on_main(std::function<void()> fn);
  // Runs the calls progress threads are waiting for.
  void service_mail();

  // Waits until every operation queued on `comm` has completed, then ends
  // its lane and drops its templates (the communicator is being freed: a
  // template's body refers to its context).
  void retire_lane(uint32_t comm);
  // Wakes every lane and waits up to `timeout_ms` for all of them to have
  // nothing queued or running; true when the engine is idle.
  bool settle(long timeout_ms);
  // Stops calling `wake` and ends the lanes; false when an operation is
  // still running (a collective some peer never joined): the lanes are then
  // left alone, and so must be the engine, which their threads use.
  bool shutdown();

 private:
  // `comm` kExternal: an external request (no lane).
  static constexpr uint32_t kExternal = UINT32_MAX;
  struct Request {
    std::shared_ptr<Op> op;
    std::shared_ptr<void> keep;
    uint32_t comm;
  };
  struct Template {
    uint32_t comm = 0;
    std::function<void()> body;
    bool wake = false;
    std::shared_ptr<void> keep;
  };
  // A call a progress thread needs made on the main thread.
  struct MainCall {
    std::function<void()> fn;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };

  std::shared_ptr<Op> make_op(std::function<void()> body);
  Lane& lane_of(uint32_t comm);
  uint64_t enqueue(uint32_t comm, std::shared_ptr<Op> op, bool wake, std::shared_ptr<void> keep);
  void wait_done(Lane& lane, const Op* op);
  Completion deliver(std::unordered_map<uint64_t, Request>::iterator it);
  void completed();  // a lane's on_done
  void wait_external(const Op* op);

  const std::thread::id main_ = std::this_thread::get_id();
  const std::function<void()> wake_;
  std::atomic<bool> waking_{true};
  Signal signal_;  // raised on every completion and main-thread call
  std::mutex mail_mu_;
  std::deque<MainCall*> mail_;
  std::unordered_map<uint64_t, Request> pending_;
  // Templates by id (core/handles.h): ids stay below 2^53, exact as
  // JavaScript numbers, and from generation 1 on never meet a request id
  // (next_id_) before the 2^24th request.
  HandleTable<Template, uint64_t, 24, 29> templates_{0, "persistent requests", 1};
  uint64_t next_id_ = 1;
  bool unkicked_ = false;  // some lane holds operations its thread was not woken for
  bool in_wait_ = false;   // the main thread is inside wait(), which reports its own completion
  ExternalHook hook_;
  // Last: destroyed first, while what their threads use is still there.
  std::vector<std::unique_ptr<Lane>> lanes_;  // by communicator handle
};

}  // namespace nodempi::progress
