#include "core/coll/context.h"

#include <utility>

namespace nodempi::coll {

namespace {
const transport::Header* header_of(transport::Segment* seg) { return seg ? seg->header() : nullptr; }
}  // namespace

Context::Context(transport::Segment* seg, uint32_t id, uint32_t rank, std::vector<uint32_t> world_ranks)
    : seg_(seg),
      id_(id),
      rank_(rank),
      size_(uint32_t(world_ranks.size())),
      half_(seg ? seg->geometry().half_bytes - kHeaderBytes : 0),
      world_ranks_(std::move(world_ranks)),
      live_(header_of(seg), world_ranks_.empty() ? 0 : world_ranks_[rank]) {
  if (!seg_) return;
  policy_ = transport::WaitPolicy::for_job(seg_->geometry().nranks);
  lines_.resize(size_);
  slots_.resize(size_t(size_) * 2);
  for (uint32_t r = 0; r < size_; ++r) {
    lines_[r] = seg_->ctrl(id_, r);
    slots_[r * 2] = seg_->slot(id_, r, 0);
    slots_[r * 2 + 1] = seg_->slot(id_, r, 1);
  }
  // Phases are never reset; a new context continues from what is posted.
  seq_ = lines_[rank_]->seq.load(std::memory_order_acquire);
}

void Context::acquire_slot(uint32_t s, const char* what) {
  for (uint32_t r = 0; r < size_; ++r) {
    if (r != rank_) wait(r, s - 1, what);
  }
}

void Context::post(uint32_t s) {
  seq_ = s;
  transport::post(lines_[rank_], s);
}

void Context::wait(uint32_t peer, uint32_t s, const char* what) {
  transport::wait_for(lines_[peer], s, policy_, live_, world_ranks_[peer], what);
}

void Context::wait_all(uint32_t s, const char* what) {
  for (uint32_t r = 0; r < size_; ++r) {
    if (r != rank_) wait(r, s, what);
  }
}

}  // namespace nodempi::coll
