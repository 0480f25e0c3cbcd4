#include "core/coll/select.h"

#include <cstring>

#include "core/coll/context.h"

namespace nodempi::coll {

namespace {

// scan and exscan take single copies up to this size. Above it the slot
// pipeline, which overlaps the lower ranks' copies with the folds, wins
// (bench/README.md, "Measurements behind the code").
constexpr uint64_t kScanDirectMax = uint64_t(1) << 20;

// How a collective picks between its two algorithms. B is the bytes per
// rank, H the data bytes of a slot half, M NODEMPI_CMA_MIN; "single copy"
// is whether the transport offers it to this job (transport/cma.h).
enum class Rule : uint8_t {
  ONE,           // one algorithm, nothing to choose
  FLAT_SMALL,    // flat if B <= min(8 KiB, H), else sliced
  FLAT_ROOT,     // flat if B <= H and (B <= 8 KiB or B <= H/4), else sliced
  DIRECT_FROM,   // direct if single copy and B >= M, else the slots
  DIRECT_RANGE,  // direct if single copy and M <= B <= 1 MiB, else the slots
  DIRECT_LATER,  // the slots carry the first phase; direct for the rest if
                 // single copy, more than one phase follows and every rank
                 // is ready (decided after the first phase, direct.h)
  FAN_UNCHECKED,  // fan if ranks outnumber cores and NODEMPI_CHECK_SAME=0
                  // (coll/barrier.cc), else flat
};

struct Row {
  uint32_t kind;
  Algo slots;  // the algorithm through the slots, valid for every call
  Algo other;  // AUTO: none
  Rule rule;
};

// The selection table, one row per collective in Kind order.
// Forcing (NODEMPI_ALGO) is honoured where the algorithm can run the call:
// flat needs the vector to fit one slot half (B <= H), sliced needs B > 0,
// direct needs single copy; otherwise the rule decides.
constexpr Row kTable[kKinds] = {
    // collective    slots            other         automatic choice
    {0,              Algo::AUTO,      Algo::AUTO,   Rule::ONE},
    {BARRIER,        Algo::FLAT,      Algo::FAN,    Rule::FAN_UNCHECKED},
    {BCAST,          Algo::PIPELINED, Algo::DIRECT, Rule::DIRECT_FROM},
    {GATHER,         Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_FROM},
    {GATHERV,        Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_LATER},
    {SCATTER,        Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_FROM},
    {SCATTERV,       Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_LATER},
    {ALLGATHER,      Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_FROM},
    {ALLGATHERV,     Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_FROM},  // B: the largest block
    {ALLTOALL,       Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_FROM},
    {ALLTOALLV,      Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_LATER},
    {REDUCE,         Algo::FLAT,      Algo::SLICED, Rule::FLAT_ROOT},
    {ALLREDUCE,      Algo::FLAT,      Algo::SLICED, Rule::FLAT_SMALL},
    {REDUCE_SCATTER, Algo::FLAT,      Algo::AUTO,   Rule::ONE},
    {SCAN,           Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_RANGE},
    {EXSCAN,         Algo::FLAT,      Algo::DIRECT, Rule::DIRECT_RANGE},
};

constexpr bool in_kind_order() {
  for (uint32_t k = 0; k < kKinds; ++k) {
    if (kTable[k].kind != k) return false;
  }
  return true;
}
static_assert(in_kind_order(), "kTable is indexed by Kind");

Algo automatic(const Row& row, uint64_t bytes, size_t half, bool single_copy, size_t min_direct,
               bool crowded_unchecked) {
  switch (row.rule) {
    case Rule::ONE:
      return row.slots;
    case Rule::FLAT_SMALL:
      return bytes <= kSmallReduceBytes && bytes <= half ? Algo::FLAT : Algo::SLICED;
    case Rule::FLAT_ROOT:
      return bytes <= half && (bytes <= kSmallReduceBytes || bytes <= half / 4) ? Algo::FLAT : Algo::SLICED;
    case Rule::DIRECT_FROM:
      return single_copy && bytes >= min_direct ? Algo::DIRECT : row.slots;
    case Rule::DIRECT_RANGE:
      return single_copy && bytes >= min_direct && bytes <= kScanDirectMax ? Algo::DIRECT : row.slots;
    case Rule::DIRECT_LATER:
      return single_copy ? Algo::DIRECT : row.slots;
    case Rule::FAN_UNCHECKED:
      return crowded_unchecked ? Algo::FAN : row.slots;
  }
  return row.slots;
}

// Whether algorithm `a` of `row` can run this call.
bool can_run(const Row& row, Algo a, uint64_t bytes, size_t half, bool single_copy) {
  if (a != row.slots && a != row.other) return false;
  if (a == Algo::DIRECT) return single_copy;
  if (a == Algo::SLICED) return bytes > 0;
  // The reductions' flat folds the whole vector from one slot half; the
  // other slot algorithms cut a message into as many chunks as it needs.
  if (row.other == Algo::SLICED) return bytes <= half;
  return true;
}

}  // namespace

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::AUTO: return "auto";
    case Algo::FLAT: return "flat";
    case Algo::SLICED: return "sliced";
    case Algo::PIPELINED: return "pipelined";
    case Algo::DIRECT: return "direct";
    case Algo::FAN: return "fan";
  }
  return "?";
}

Algo select_for(uint32_t kind, uint64_t bytes, size_t half, bool single_copy, size_t min_direct, Algo forced,
                bool crowded_unchecked) {
  const Row& row = kTable[kind < kKinds ? kind : 0];
  if (forced != Algo::AUTO && can_run(row, forced, bytes, half, single_copy)) return forced;
  return automatic(row, bytes, half, single_copy, min_direct, crowded_unchecked);
}

Algo select(const Context& c, uint32_t kind, uint64_t bytes) {
  const Settings& t = c.settings();
  if (kind >= kKinds) kind = 0;
  const bool single_copy = kTable[kind].other == Algo::DIRECT && t.single_copy;
  return select_for(kind, bytes, c.half_bytes(), single_copy, t.cma_min, t.forced.kind[kind], c.crowded() && !t.check_same);
}

ForcedAlgos parse_forced_algos(const char* text, std::string* error) {
  ForcedAlgos out;
  if (!text) return out;
  auto complain = [&](const std::string& entry, const std::string& why) {
    if (!error) return;
    if (!error->empty()) *error += "; ";
    *error += "'" + entry + "' " + why;
  };
  const char* p = text;
  while (*p) {
    const char* end = std::strchr(p, ',');
    if (!end) end = p + std::strlen(p);
    std::string entry(p, end);
    p = *end ? end + 1 : end;
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      complain(entry, "is not collective:algorithm");
      continue;
    }
    std::string coll = entry.substr(0, colon), name = entry.substr(colon + 1);
    uint32_t kind = 0;
    for (uint32_t k = 1; k < kKinds; ++k) {
      if (coll == kind_name(k)) kind = k;
    }
    if (!kind) {
      complain(entry, "names no collective");
      continue;
    }
    const Row& row = kTable[kind];
    if (row.other == Algo::AUTO) {
      complain(entry, std::string("names a collective with one algorithm (") + algo_name(row.slots) + ")");
      continue;
    }
    if (name == "auto") {
      out.kind[kind] = Algo::AUTO;
    } else if (name == algo_name(row.slots)) {
      out.kind[kind] = row.slots;
    } else if (name == algo_name(row.other)) {
      out.kind[kind] = row.other;
    } else {
      complain(entry, "names no algorithm of " + coll + " (" + algo_name(row.slots) + ", " + algo_name(row.other) +
                          " or auto)");
    }
  }
  return out;
}

}  // namespace nodempi::coll
