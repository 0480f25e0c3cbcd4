#include <cstring>
#include <vector>

#include "core/coll/fold.h"

namespace nodempi::coll {

// exchange_fold: for intercommunicator reduce, allreduce and reduce-scatter.
//   1. alltoallv the vectors into a scratch buffer, packed in merged order;
//   2. fold the vectors received, lowest sender first, into recv.
void exchange_fold(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
                   const size_t* recv_bytes, size_t count, const Combiner& op, uint32_t kind, bool takes_part) {
  const uint32_t n = c.size();
  std::vector<size_t> displs(n);
  size_t total = 0;
  for (uint32_t r = 0; r < n; ++r) {
    displs[r] = total;
    total += recv_bytes[r];
  }
  std::vector<uint8_t> scratch(total);
  // A rank that sends nothing still takes part; alltoallv reads no bytes.
  static const uint8_t none = 0;
  // Sizes differ between ranks (a reduce-scatter's blocks, a rank with
  // nothing to send), so only the op and the datatype are compared.
  Signature sig;
  sig.kind = kind;
  sig.root = kNoRoot;
  sig.op = takes_part ? op.op_id : kAnyOp;
  sig.type = takes_part ? op.type_id : 0;
  alltoallv(c, send ? send : &none, send_bytes, send_displs, scratch.data(), recv_bytes, displs.data(), &sig);
  std::vector<const uint8_t*> src;
  for (uint32_t r = 0; r < n; ++r) {
    if (recv_bytes[r]) src.push_back(scratch.data() + displs[r]);
  }
  if (!src.empty() && recv) fold(op, src.data(), uint32_t(src.size()), static_cast<uint8_t*>(recv), count);
}

}  // namespace nodempi::coll
