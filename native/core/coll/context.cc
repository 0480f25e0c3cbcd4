#include "core/coll/context.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "core/coll/select.h"
#include "core/kernels/kernels.h"
#include "core/error.h"
#include "core/transport/cma.h"
#include "core/tuning.h"

namespace nodempi::coll {

namespace {
const transport::Header* header_of(transport::Segment* seg) { return seg ? seg->header() : nullptr; }

uint64_t next_serial() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

Context::Context(transport::Segment* seg, uint32_t id, uint32_t rank, std::vector<uint32_t> world_ranks)
    : seg_(seg),
      id_(id),
      rank_(rank),
      size_(uint32_t(world_ranks.size())),
      half_(seg ? seg->geometry().half_bytes - kHeaderBytes : 0),
      world_ranks_(std::move(world_ranks)),
      serial_(next_serial()),
      live_(header_of(seg), world_ranks_.empty() ? 0 : world_ranks_[rank]) {
  const Tuning& t = tuning();
  settings_.check_same = t.check_same;
  settings_.cma_min = t.cma_min;
  settings_.forced = t.algo;
  if (!seg_) return;
  policy_ = transport::WaitPolicy::for_job(seg_->geometry().nranks);
  crowded_ = transport::oversubscribed(seg_->geometry().nranks);
  if (size_ > 1) {
    const transport::CmaMode m = transport::cma_mode(seg_->geometry().nranks);
    settings_.single_copy = m != transport::CmaMode::OFF;
    settings_.copies = m == transport::CmaMode::ON || m == transport::CmaMode::REFUSE;
  }
  lines_.resize(size_);
  slots_.assign(size_t(size_) * 2, nullptr);
  sets_.assign(size_, transport::SlotSets::kNone);
  headers_.resize(size_);
  for (uint32_t r = 0; r < size_; ++r) {
    lines_[r] = seg_->ctrl(id_, r);
    headers_[r] = seg_->headers(id_, r);
  }
  // The generation tells this use of the context from earlier ones (the
  // leader took it before the collective that told us its id).
  owner_ = {id_, seg_->header()->contexts_state[id_].generation.load(std::memory_order_acquire), size_, rank_};
  // Phases are never reset; a new context continues from what is posted.
  seq_ = lines_[rank_]->seq.load(std::memory_order_acquire);
  // Nothing seen yet: far enough behind that every first wait reads the line.
  seen_.assign(size_, seq_ - (1u << 30));
}

void Context::begin() {
  if (seg_ && size_ > 1) ++depth_;
}

void Context::end() {
  if (!seg_ || size_ == 1 || --depth_ > 0) return;
  lines_[rank_]->done.store(seq_, std::memory_order_release);
  if (!bound_) return;
  seg_->sets()->release(sets_[rank_], seq_);
  bound_ = false;
}

void Context::bind() {
  if (depth_ == 0) throw CoreError(ErrorClass::INTERN, "a collective wrote into its slot outside a Round");
  uint32_t set = seg_->sets()->hold(owner_, sets_[rank_]);
  if (set != sets_[rank_]) {
    point(rank_, set);
    lines_[rank_]->set.store(set, std::memory_order_relaxed);
  }
  bound_ = true;
}

void Context::point(uint32_t member, uint32_t set) {
  sets_[member] = set;
  slots_[member * 2] = seg_->slot(world_ranks_[member], set, 0);
  slots_[member * 2 + 1] = seg_->slot(world_ranks_[member], set, 1);
}

void Context::see(uint32_t peer) {
  uint32_t set = lines_[peer]->set.load(std::memory_order_relaxed);
  if (set == sets_[peer]) return;
  if (set >= transport::kSets) {
    throw CoreError(ErrorClass::INTERN, "rank " + std::to_string(world_ranks_[peer]) +
                                            " published a slot set out of range (" + std::to_string(set) + ")");
  }
  point(peer, set);
}

const char* kind_name(uint32_t kind) {
  static const char* const names[] = {"?", "barrier", "bcast", "gather", "gatherv", "scatter", "scatterv",
                                      "allgather", "allgatherv", "alltoall", "alltoallv", "reduce", "allreduce",
                                      "reduceScatter", "scan", "exscan"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

uint32_t Context::open(const Signature& sig, const char* what, bool header_only) {
  uint32_t s = next_phase();
  // Phase s - kHeaderLines used this header line; a peer that has posted
  // the phase after it has read it.
  if (header_only) wait_all(s - transport::kHeaderLines + 1, what);
  else acquire_slot(s, what);
  header(rank_, s)->sig = sig;
  opened_ = s;
  return s;
}

namespace {

// "ranks 0, 2 and 3" for a message.
std::string rank_list(const std::vector<uint32_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) out += i + 1 == ranks.size() ? " and " : ", ";
    out += std::to_string(ranks[i]);
  }
  return out;
}

}  // namespace

bool Context::matches(uint32_t s, const char* what, uint32_t with) {
  // Each peer's header line (its signature, and a small collective's data)
  // is read as soon as its post is seen: waiting on the post while reading
  // that line too brings both in together instead of one after the other
  // (bench/CORE.md, "Reading the header while waiting").
  for (uint32_t r = 0; r < size_; ++r) {
    if (r != rank_ && compared(r, with)) wait(r, s, what, header(r, s));
  }
#ifdef NODEMPI_BENCH_NO_AGREE
  // Benchmark builds only (bench/mismatch.mjs): the same protocol without
  // the comparison, to measure what always-on mismatch detection costs.
  return true;
#endif
  // Almost always every signature is the same, byte for byte: then no field
  // can differ, and one comparison per peer says so.
  const Signature& mine = header(rank_, s)->sig;
  bool same = true;
  for (uint32_t r = 0; r < size_; ++r) {
    if (r != rank_ && compared(r, with)) same = same && std::memcmp(&header(r, s)->sig, &mine, sizeof mine) == 0;
  }
  return same;
}

void Context::agree(uint32_t s, const char* what, uint32_t with) {
  if (matches(s, what, with)) return;
  // Compare everyone with rank 0, field by field; report the first field
  // that differs, with who said what.
  // Fields a rank leaves open (no root known, no size to compare) are
  // given as all-ones by `field` and take no part.
  auto differs = [&](auto field) {
    bool seen = false;
    uint64_t value = 0;
    for (uint32_t r = 0; r < size_; ++r) {
      if (!compared(r, with)) continue;
      uint64_t v = field(header(r, s)->sig);
      if (v == ~uint64_t(0)) continue;
      if (seen && v != value) return true;
      seen = true;
      value = v;
    }
    return false;
  };
  auto report = [&](const char* name, auto field, auto show) {
    // Group ranks by value, in rank order of first appearance.
    std::vector<std::pair<std::string, std::vector<uint32_t>>> groups;
    for (uint32_t r = 0; r < size_; ++r) {
      if (!compared(r, with)) continue;
      std::string v = show(field(header(r, s)->sig));
      auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == v; });
      if (it == groups.end()) groups.push_back({v, {r}});
      else it->second.push_back(r);
    }
    std::string msg = std::string(what) + ": ranks disagree on the " + name + ":";
    for (size_t i = 0; i < groups.size(); ++i) {
      msg += (i ? "; " : " ") + rank_list(groups[i].second) + " " + groups[i].first;
    }
    throw CoreError(ErrorClass::NOT_SAME, msg);
  };
  auto kind = [](const Signature& g) { return uint64_t(g.kind); };
  if (differs(kind)) report("collective", kind, [](uint64_t k) { return std::string("called ") + kind_name(uint32_t(k)); });
  auto root = [](const Signature& g) { return g.root == kNoRoot ? ~uint64_t(0) : uint64_t(g.root); };
  if (differs(root)) report("root", root, [](uint64_t v) { return "passed root " + std::to_string(v); });
  auto op = [](const Signature& g) { return g.op == kAnyOp ? ~uint64_t(0) : uint64_t(uint32_t(g.op)); };
  if (differs(op)) {
    report("op", op, [](uint64_t v) {
      int32_t id = int32_t(uint32_t(v));
      const char* name = id >= 0 ? kernels::op_name(kernels::OpId(id)) : nullptr;
      return id == -1 ? std::string("passed a user-defined op")
                      : name ? std::string("passed Op.") + name : "passed op #" + std::to_string(id);
    });
  }
  auto type = [](const Signature& g) { return g.type ? uint64_t(g.type) : ~uint64_t(0); };
  if (differs(type)) {
    report("datatype", type, [](uint64_t v) {
      // Named by how it is stored: INT and INT32_T are one, and agree.
      const char* name = v >= 1 && v <= 256 ? kernels::type_name(kernels::TypeId(v - 1)) : nullptr;
      return name ? std::string("passed Datatype.") + name : "passed basic type #" + std::to_string(v - 1);
    });
  }
  auto bytes = [](const Signature& g) { return g.check_bytes ? g.bytes : ~uint64_t(0); };
  if (differs(bytes)) {
    report("message size", bytes, [](uint64_t v) { return "sent or expected " + std::to_string(v) + " bytes"; });
  }
  // Checked last: a size that differs also sends ranks down different paths.
  auto protocol = [](const Signature& g) { return uint64_t((g.direct >> 1) & 1); };
  if (differs(protocol)) {
    report("protocol", protocol, [](uint64_t v) {
      return std::string(v ? "took" : "did not take") +
             " the single-copy path (NODEMPI_CMA, NODEMPI_CMA_MIN or NODEMPI_ALGO differs)";
    });
  }
  auto algo = [](const Signature& g) { return g.algo ? uint64_t(g.algo) : ~uint64_t(0); };
  if (differs(algo)) {
    const uint32_t k = header(rank_, s)->sig.kind;
    report("algorithm (NODEMPI_ALGO differs)", algo, [k](uint64_t v) {
      return std::string("chose ") + kind_name(k) + "_" + algo_name(Algo(v));
    });
  }
}

int32_t Context::pid(uint32_t member) const {
  return seg_->header()->ranks[world_ranks_[member]].pid.load(std::memory_order_acquire);
}

void Context::acquire_slot(uint32_t s, const char* what) { wait_all(s - 1, what); }

void Context::post(uint32_t s) {
  seq_ = s;
  transport::post(lines_[rank_], s);
}

void Context::wait(uint32_t peer, uint32_t s, const char* what, const void* touch) {
  if (transport::seq_reached(seen_[peer], s)) return;
  seen_[peer] = transport::wait_for(lines_[peer], s, policy_, live_, world_ranks_[peer], what, touch);
  see(peer);
}

void Context::wait_all(uint32_t s, const char* what) {
  for (uint32_t r = 0; r < size_; ++r) {
    if (r != rank_) wait(r, s, what);
  }
}

}  // namespace nodempi::coll
