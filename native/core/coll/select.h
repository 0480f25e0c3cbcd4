// Which algorithm a collective runs: the selection table (select.cc) and
// NODEMPI_ALGO, which forces one per collective.
//
// Every rank must take the same decision, so a choice depends only on what
// MPI requires to match (the collective and its byte count), on the job
// (slot size, world size, ranks against cores) and on the environment,
// which the launcher passes to every rank. Each collective with a choice
// publishes it in its signature (Signature::algo), so ranks whose
// environments differ throw ERR_NOT_SAME instead of mixing protocols.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nodempi::coll {

class Context;

// The algorithms, as named in coll/*.cc (<collective>_<algorithm>). Zero is
// "no choice made": not compared between ranks.
enum class Algo : uint8_t { AUTO = 0, FLAT, SLICED, PIPELINED, DIRECT, FAN };
const char* algo_name(Algo a);

// Up to this many bytes an allreduce or reduce folds the whole vector in
// one phase (every rank, or the root, folding alone beats sharing the work).
constexpr uint64_t kSmallReduceBytes = 8192;

// Kind values (context.h) run from 1 to 15.
constexpr uint32_t kKinds = 16;

// NODEMPI_ALGO parsed: the algorithm forced for each collective, or AUTO.
struct ForcedAlgos {
  Algo kind[kKinds] = {};
};

// Parses "allreduce:sliced,bcast:direct" (collective names as the API
// spells them: reduceScatter, exscan, ...). An entry that names no
// collective, a collective with one algorithm, or an algorithm the
// collective does not have is left out and described in `error` (entries
// separated by "; "); the rest still apply.
ForcedAlgos parse_forced_algos(const char* text, std::string* error);

// The algorithm collective `kind` runs for a message of `bytes` per rank
// (the largest block for allgatherv; ignored for the v-collectives, whose
// counts not every rank knows). NODEMPI_ALGO's choice where it is valid for
// this call, else the table's rule. For the single-copy algorithms
// (DIRECT) this is where the call starts: the direct protocol itself still
// falls back to the slots when a rank cannot copy (direct.h).
Algo select(const Context& c, uint32_t kind, uint64_t bytes);

// The same decision from its inputs alone, for tests: `half` the data bytes
// of a slot half, `single_copy` whether the transport offers it for this
// job, `min_direct` NODEMPI_CMA_MIN, `crowded_unchecked` whether ranks
// outnumber cores and NODEMPI_CHECK_SAME=0.
Algo select_for(uint32_t kind, uint64_t bytes, size_t half, bool single_copy, size_t min_direct, Algo forced,
                bool crowded_unchecked = false);

}  // namespace nodempi::coll
