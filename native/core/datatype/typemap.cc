// Parsing and checking a committed datatype description (format in typemap.h).
#include "core/datatype/typemap.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace nodempi::datatype {
namespace {

constexpr double kMaxWord = 9007199254740992.0;  // 2^53: every integer below is exact in a double

[[noreturn]] void malformed(const std::string& why) {
  throw CoreError(ErrorClass::TYPE, "malformed datatype description: " + why);
}

int64_t add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) malformed("a displacement overflows 64 bits");
  return r;
}

int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) malformed("a size or displacement overflows 64 bits");
  return r;
}

class Reader {
 public:
  Reader(const double* words, size_t count) : words_(words), count_(count) {}

  int64_t next(const char* what) {
    if (at_ >= count_) malformed(std::string("it ends before ") + what);
    double d = words_[at_++];
    if (!(d >= -kMaxWord && d <= kMaxWord) || d != std::floor(d)) {
      malformed(std::string(what) + " is not an integer");
    }
    return int64_t(d);
  }
  int64_t at_least(int64_t min, const char* what) {
    int64_t v = next(what);
    if (v < min) malformed(std::string(what) + " is " + std::to_string(v) + ", below " + std::to_string(min));
    return v;
  }
  bool done() const { return at_ == count_; }

 private:
  const double* words_;
  size_t count_;
  size_t at_ = 0;
};

// Bytes touched by `n` copies of a child touching [lo, hi), placed `stride`
// apart, relative to where the first copy is placed.
void repeat(int64_t lo, int64_t hi, int64_t n, int64_t stride, int64_t& out_lo, int64_t& out_hi) {
  int64_t last = mul(n - 1, stride);
  out_lo = add(lo, std::min<int64_t>(0, last));
  out_hi = add(hi, std::max<int64_t>(0, last));
}

}  // namespace

Typemap::Typemap(const double* words, size_t count) {
  Reader r(words, count);
  if (r.next("the version") != 1) malformed("unknown version");
  int64_t nodes = r.at_least(0, "the node count");
  if (nodes > int64_t(count)) malformed("the node count exceeds the description");
  root_ = int32_t(r.at_least(-1, "the root"));
  if (root_ != nodes - 1) malformed("the root must be the last node");
  extent_ = r.next("the extent");
  int64_t size = r.at_least(0, "the size");
  int64_t true_lb = r.next("the true lower bound");
  int64_t true_ub = r.next("the true upper bound");

  nodes_.reserve(size_t(nodes));
  for (int64_t i = 0; i < nodes; ++i) {
    Node nd{};
    int64_t kind = r.next("a node kind");
    nd.off = r.next("a node offset");
    auto child_of = [&](const char* what) {
      int64_t c = r.next(what);
      if (c < 0 || c >= i) malformed(std::string(what) + " must name an earlier node");
      return int32_t(c);
    };
    int64_t lo = 0, hi = 0;  // relative to this node's origin
    switch (kind) {
      case int64_t(Kind::BLOCK): {
        nd.kind = Kind::BLOCK;
        nd.size = r.at_least(1, "a block length");
        lo = 0;
        hi = nd.size;
        break;
      }
      case int64_t(Kind::VECTOR): {
        nd.kind = Kind::VECTOR;
        nd.n = r.at_least(1, "a vector count");
        nd.stride = r.next("a vector stride");
        nd.child = child_of("a vector child");
        const Node& c = nodes_[size_t(nd.child)];
        nd.size = mul(nd.n, c.size);
        repeat(c.lo, c.hi, nd.n, nd.stride, lo, hi);
        break;
      }
      case int64_t(Kind::LIST): {
        nd.kind = Kind::LIST;
        nd.n = r.at_least(1, "a list length");
        if (nd.n > int64_t(count)) malformed("a list is longer than the description");
        nd.first = uint32_t(entries_.size());
        lo = INT64_MAX;
        hi = INT64_MIN;
        int64_t start = 0;
        for (int64_t j = 0; j < nd.n; ++j) {
          Entry e{};
          e.disp = r.next("a list displacement");
          e.len = r.at_least(1, "a list run length");
          e.start = start;
          start = add(start, e.len);
          lo = std::min(lo, e.disp);
          hi = std::max(hi, add(e.disp, e.len));
          entries_.push_back(e);
        }
        nd.size = start;
        break;
      }
      case int64_t(Kind::INDEXED): {
        nd.kind = Kind::INDEXED;
        nd.n = r.at_least(1, "an indexed length");
        if (nd.n > int64_t(count)) malformed("an indexed node is longer than the description");
        nd.stride = r.next("an indexed stride");
        nd.child = child_of("an indexed child");
        const Node c = nodes_[size_t(nd.child)];
        nd.first = uint32_t(entries_.size());
        lo = INT64_MAX;
        hi = INT64_MIN;
        int64_t start = 0;
        for (int64_t j = 0; j < nd.n; ++j) {
          Entry e{};
          e.disp = r.next("an indexed displacement");
          e.len = r.at_least(1, "an indexed block count");
          e.start = start;
          start = add(start, mul(e.len, c.size));
          int64_t elo, ehi;
          repeat(c.lo, c.hi, e.len, nd.stride, elo, ehi);
          lo = std::min(lo, add(e.disp, elo));
          hi = std::max(hi, add(e.disp, ehi));
          entries_.push_back(e);
        }
        nd.size = start;
        break;
      }
      case int64_t(Kind::STRUCT): {
        nd.kind = Kind::STRUCT;
        nd.n = r.at_least(1, "a struct length");
        if (nd.n > int64_t(count)) malformed("a struct is longer than the description");
        nd.first = uint32_t(entries_.size());
        lo = INT64_MAX;
        hi = INT64_MIN;
        int64_t start = 0;
        for (int64_t j = 0; j < nd.n; ++j) {
          Entry e{};
          e.child = child_of("a struct child");
          const Node& c = nodes_[size_t(e.child)];
          e.start = start;
          start = add(start, c.size);
          lo = std::min(lo, c.lo);
          hi = std::max(hi, c.hi);
          entries_.push_back(e);
        }
        nd.size = start;
        break;
      }
      default:
        malformed("unknown node kind " + std::to_string(kind));
    }
    nd.lo = add(nd.off, lo);
    nd.hi = add(nd.off, hi);
    nodes_.push_back(nd);
  }
  if (!r.done()) malformed("trailing words after the last node");

  if (root_ >= 0) {
    size_ = root().size;
    true_lb_ = root().lo;
    true_ub_ = root().hi;
  }
  // The header carries what lib/ computed from the type map; a disagreement
  // means one side has a bug, and moving data by either would be wrong.
  if (size != size_ || true_lb != true_lb_ || true_ub != true_ub_) {
    malformed("lib/ computed size " + std::to_string(size) + ", true bounds [" + std::to_string(true_lb) + ", " +
              std::to_string(true_ub) + "), the description gives size " + std::to_string(size_) + ", [" +
              std::to_string(true_lb_) + ", " + std::to_string(true_ub_) + ")");
  }
}

void Typemap::span(size_t count, int64_t& lo, int64_t& hi) const {
  lo = hi = 0;
  if (empty() || count == 0) return;
  int64_t last;
  if (count - 1 > size_t(INT64_MAX) || __builtin_mul_overflow(int64_t(count - 1), extent_, &last) ||
      __builtin_add_overflow(true_lb_, std::min<int64_t>(0, last), &lo) ||
      __builtin_add_overflow(true_ub_, std::max<int64_t>(0, last), &hi)) {
    throw CoreError(ErrorClass::COUNT, std::to_string(count) + " items of extent " + std::to_string(extent_) +
                                           " overflow the address space");
  }
}

std::string Typemap::describe() const {
  std::string out;
  if (empty()) return "empty";
  describe(root_, out);
  return out;
}

void Typemap::describe(int32_t i, std::string& out) const {
  const Node& nd = nodes_[size_t(i)];
  if (nd.off) out += "@" + std::to_string(nd.off) + ":";
  switch (nd.kind) {
    case Kind::BLOCK:
      out += "block(" + std::to_string(nd.size) + ")";
      return;
    case Kind::VECTOR:
      out += "vector(" + std::to_string(nd.n) + " x " + std::to_string(nd.stride) + ", ";
      describe(nd.child, out);
      out += ")";
      return;
    case Kind::LIST:
      out += "list(";
      for (int64_t j = 0; j < nd.n; ++j) {
        const Entry& e = entries_[nd.first + size_t(j)];
        if (j) out += " ";
        if (j == 8 && nd.n > 10) {
          out += "... " + std::to_string(nd.n - 8) + " more";
          break;
        }
        out += std::to_string(e.disp) + "+" + std::to_string(e.len);
      }
      out += ")";
      return;
    case Kind::INDEXED:
      out += "indexed(" + std::to_string(nd.n) + " runs x " + std::to_string(nd.stride) + ", ";
      describe(nd.child, out);
      out += ")";
      return;
    case Kind::STRUCT:
      out += "struct(";
      for (int64_t j = 0; j < nd.n; ++j) {
        if (j) out += ", ";
        describe(entries_[nd.first + size_t(j)].child, out);
      }
      out += ")";
      return;
  }
}

}  // namespace nodempi::datatype
