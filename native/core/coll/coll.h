// Blocking collectives on a Context. Buffers are contiguous bytes, or for
// bcast and allgather a Layout (layout.h: contiguous or a derived type's
// items, moved as their packed stream); the TypeScript layer has already
// checked sizes, counts and roots. A null (absent) send buffer means
// MPI_IN_PLACE (the data is in the receive buffer).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/coll/context.h"
#include "core/coll/layout.h"
#include "core/kernels/kernels.h"

namespace nodempi::coll {

// How to combine items: out = a op b over n items, `a` from the lower rank.
// A predefined op is a kernel; a user-defined one is a callback with its own
// context (the N-API layer calls into JS from it). `item` is the byte size of
// one item.
struct Combiner {
  kernels::ReduceFn fn = nullptr;
  size_t item = 0;
  void (*user)(void* ctx, const void* a, const void* b, void* out, size_t n) = nullptr;
  void* ctx = nullptr;
  int32_t op_id = -2;     // for the signature: predefined op id, -1 user
  uint32_t type_id = 0;   // for the signature: kernel type id + 1

  void apply(const void* a, const void* b, void* out, size_t n) const {
    if (user) {
      user(ctx, a, b, out, n);
    } else {
      fn(a, b, out, n);
    }
  }
  // Items per call: kernels work on blocks that stay in L1; a callback
  // gets as much as possible per call, since each call has a fixed cost.
  size_t block_items() const { return user ? SIZE_MAX : std::max<size_t>(1, 16384 / item); }
};

// The last phase of a collective whose local work can fail (a user op that
// throws): every rank publishes whether it succeeded and learns the lowest
// rank that did not, or -1. Costs one phase, so it runs only when needed.
int verdict(Context& c, bool ok);

void barrier(Context& c);
// `bytes` is the stream: count x size for a derived type.
void bcast(Context& c, const Layout& buf, size_t bytes, uint32_t root);
inline void bcast(Context& c, void* buf, size_t bytes, uint32_t root) { bcast(c, Layout(buf), bytes, root); }
// `bytes` is one rank's block; recv holds size() blocks (root only).
void gather(Context& c, const void* send, void* recv, size_t bytes, uint32_t root);
// `bytes` is one rank's block; send holds size() blocks (root only). A null
// recv at the root means IN_PLACE.
void scatter(Context& c, const void* send, void* recv, size_t bytes, uint32_t root);
// `bytes` is one rank's stream; recv holds size() blocks.
void allgather(Context& c, const Layout& send, const Layout& recv, size_t bytes);
inline void allgather(Context& c, const void* send, void* recv, size_t bytes) {
  allgather(c, Layout(send), Layout(recv), bytes);
}
void alltoall(Context& c, const void* send, void* recv, size_t bytes);
// `count` items; recv matters at the root only.
void reduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op, uint32_t root);
void allreduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op);

}  // namespace nodempi::coll

namespace nodempi::coll {

// v-variants: per-rank byte counts and byte displacements (lib/ converts
// element counts). Arrays have size() entries and matter where MPI says.
void gatherv(Context& c, const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
             const size_t* recv_displs, uint32_t root);
void scatterv(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
              size_t recv_bytes, uint32_t root);
void allgatherv(Context& c, const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                const size_t* recv_displs);
// Also alltoallw once lib/ has turned each block into contiguous bytes.
// A null send means IN_PLACE: blocks are read from recv (recv counts).
// `as`: the signature to publish instead of alltoallv's (exchange_fold's
// reduction), whose kind also names the call in errors.
void alltoallv(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
               const size_t* recv_bytes, const size_t* recv_displs, const Signature* as = nullptr);
// Block r (counts[r] items, blocks packed in rank order in send) of the
// combined vector lands in rank r's recv. IN_PLACE reads send from recv.
void reduce_scatter(Context& c, const void* send, void* recv, const size_t* counts, const Combiner& op);
// Inclusive (scan) or exclusive (exscan: rank 0's recv untouched) prefix
// reduction in rank order.
void scan(Context& c, const void* send, void* recv, size_t count, const Combiner& op, bool exclusive);

// Thrown by the core when a receive is smaller than what arrives; nothing is
// written past the receive buffer.
void throw_truncated(const char* call, uint32_t from, size_t sent, size_t room);

}  // namespace nodempi::coll

namespace nodempi::coll {

// Intercommunicator reductions: an alltoallv over the merged context brings
// each rank the vectors it must combine (recv_bytes per merged rank, each a
// whole vector of `count` items or nothing), and they are folded in merged
// rank order, i.e. in rank order of the sending group, into recv. `kind`
// (REDUCE, ALLREDUCE or REDUCE_SCATTER) is what every rank's signature
// says, with the op and its datatype, so that ranks disagreeing on them
// fail together (ERR_NOT_SAME); `takes_part` false (MPI_PROC_NULL) leaves
// this rank's op and datatype out of the comparison.
void exchange_fold(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
                   const size_t* recv_bytes, size_t count, const Combiner& op, uint32_t kind, bool takes_part);

}  // namespace nodempi::coll
