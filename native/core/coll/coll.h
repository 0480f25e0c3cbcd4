// Blocking collectives on a Context. Buffers are contiguous bytes; the
// TypeScript layer has already checked sizes, counts and roots. A null send
// buffer means MPI_IN_PLACE (the data is in the receive buffer).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/coll/context.h"
#include "core/kernels/kernels.h"

namespace nodempi::coll {

// How to combine items: `fn(a, b, out, n)` computes out = a op b with `a`
// from the lower rank; `item` is the byte size of one item.
struct Combiner {
  kernels::ReduceFn fn;
  size_t item;
};

void barrier(Context& c);
void bcast(Context& c, void* buf, size_t bytes, uint32_t root);
// `bytes` is one rank's block; recv holds size() blocks (root only).
void gather(Context& c, const void* send, void* recv, size_t bytes, uint32_t root);
// `bytes` is one rank's block; send holds size() blocks (root only). A null
// recv at the root means IN_PLACE.
void scatter(Context& c, const void* send, void* recv, size_t bytes, uint32_t root);
void allgather(Context& c, const void* send, void* recv, size_t bytes);
void alltoall(Context& c, const void* send, void* recv, size_t bytes);
// `count` items; recv matters at the root only.
void reduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op, uint32_t root);
void allreduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op);

}  // namespace nodempi::coll
