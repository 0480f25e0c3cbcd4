// The committed form of a derived datatype: a small tree of loops over byte
// blocks (in the spirit of MPICH's dataloops), never a per-element list, so
// its size does not grow with counts. lib/datatype.ts builds it at commit()
// and hands it over once as a Float64Array; Typemap parses and re-checks it.
//
// Wire format (every word an integer-valued double, |x| <= 2^53):
//
//   header  1, nodes, root, extent, size, true_lb, true_ub
//   nodes   `nodes` records, children always before their parents:
//     BLOCK    1, off, len                          len bytes at off
//     VECTOR   2, off, n, stride, child              child at off + i*stride, i < n
//     LIST     3, off, m, (disp, len) x m            byte runs at off + disp
//     INDEXED  4, off, m, stride, child, (disp, count) x m
//                                                    count children at off + disp + j*stride
//     STRUCT   5, off, m, child x m                  children at off (each has its own off)
//
// `root` is -1 for a type with no data (size 0). Offsets are relative to the
// origin of the parent (of the item, for the root); item i of a message
// starts at i * extent. The stream of an item lists the bytes in type-map
// order: children in the order given, loops in increasing index.
// size/true_lb/true_ub in the header are what lib/ computed from the type
// map; the parser recomputes them from the tree and rejects a mismatch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nodempi::datatype {

enum class Kind : uint8_t { BLOCK = 1, VECTOR = 2, LIST = 3, INDEXED = 4, STRUCT = 5 };

struct Node {
  Kind kind;
  int64_t off;     // origin relative to the parent's origin
  int64_t size;    // bytes of stream one instance produces (> 0)
  int64_t lo, hi;  // bytes touched, relative to the parent's origin: [lo, hi)
  int64_t n;       // VECTOR: repetitions; LIST, INDEXED, STRUCT: entries
  int64_t stride;  // VECTOR, INDEXED: bytes between repetitions of the child
  int32_t child;   // VECTOR, INDEXED: node index
  uint32_t first;  // LIST, INDEXED, STRUCT: index of the first entry
};

// An entry of a LIST (a byte run), INDEXED (a run of children) or STRUCT
// (a child); `start` is its first byte in the node's stream, for seeking.
struct Entry {
  int64_t disp;   // LIST, INDEXED
  int64_t len;    // LIST: bytes; INDEXED: children
  int64_t start;
  int32_t child;  // STRUCT
};

class Typemap {
 public:
  // Throws CoreError(TYPE) when the description is malformed or does not
  // agree with the header.
  Typemap(const double* words, size_t count);

  int64_t size() const { return size_; }
  int64_t extent() const { return extent_; }
  // Bytes touched by one item relative to its origin: [true_lb, true_ub).
  // Both 0 for a type with no data.
  int64_t true_lb() const { return true_lb_; }
  int64_t true_ub() const { return true_ub_; }
  bool empty() const { return root_ < 0; }
  const Node& root() const { return nodes_[size_t(root_)]; }
  int32_t root_index() const { return root_; }
  const Node& node(int32_t i) const { return nodes_[size_t(i)]; }
  const Entry& entry(size_t i) const { return entries_[i]; }
  size_t node_count() const { return nodes_.size(); }

  // Number of bytes a consecutive run of `count` items touches, as the
  // half-open range [lo, hi) relative to the origin of item 0; {0, 0} when
  // nothing is touched. Throws CoreError(COUNT) on overflow.
  void span(size_t count, int64_t& lo, int64_t& hi) const;

  // A one-line rendering of the tree, for tests and error messages.
  std::string describe() const;

 private:
  void describe(int32_t i, std::string& out) const;

  std::vector<Node> nodes_;
  std::vector<Entry> entries_;
  int32_t root_ = -1;
  int64_t size_ = 0, extent_ = 0, true_lb_ = 0, true_ub_ = 0;
};

}  // namespace nodempi::datatype
