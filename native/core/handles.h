// Objects by handle, in a vector whose places are reused once freed: the
// progress engine's templates and the mpi backend's communicators,
// datatypes, requests and messages. A handle is its place's generation
// above PlaceBits and `first` + the place below, so an id kept past its
// free never finds the object that reuses the place, and a lookup is one
// index and one comparison (a hash map paid its division by the bucket
// count at every call of a loop that alternates two templates).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace nodempi {

template <class T, class Id, unsigned PlaceBits, unsigned GenerationBits>
class HandleTable {
 public:
  static_assert(PlaceBits + GenerationBits < sizeof(Id) * 8, "handles stay positive");
  static constexpr Id kPlaceMask = (Id(1) << PlaceBits) - 1;

  // Places number from `first` (handles below it are the predefined
  // objects) and generations from `first_generation` (1: no handle is 0,
  // nor below 2^PlaceBits); `what` names the objects in the error when all
  // places are taken.
  HandleTable(Id first, const char* what, Id first_generation = 0)
      : first_(first), first_generation_(first_generation), what_(what) {}

  Id add(T value) {
    size_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      if (first_ + Id(places_.size()) > kPlaceMask) {
        throw CoreError(ErrorClass::OTHER, "more than " + std::to_string(kPlaceMask - first_ + 1) + " " + what_ + " at once");
      }
      i = places_.size();
      places_.push_back(Place{T{}, first_generation_ << PlaceBits | (first_ + Id(i)), false});
    }
    places_[i].value = std::move(value);
    places_[i].used = true;
    return places_[i].handle;
  }
  // Null for a handle never given out, freed, or of a freed place's earlier use.
  T* find(Id h) {
    Place* p = place(h);
    return p ? &p->value : nullptr;
  }
  // Frees `h`; a handle find() would not find is ignored.
  void remove(Id h) {
    Place* p = place(h);
    if (!p) return;
    p->used = false;
    p->value = T{};
    const Id next = (p->handle >> PlaceBits) + 1;
    p->handle = (next == Id(1) << GenerationBits ? first_generation_ : next) << PlaceBits | (p->handle & kPlaceMask);
    free_.push_back(size_t(p - places_.data()));
  }
  // f(handle, object) for every object held; f may remove it.
  template <class F>
  void each(F&& f) {
    for (size_t i = 0; i < places_.size(); i++) {
      if (places_[i].used) f(places_[i].handle, places_[i].value);
    }
  }

 private:
  struct Place {
    T value;
    Id handle;  // the place's generation above PlaceBits
    bool used;
  };
  Place* place(Id h) {
    const Id at = h & kPlaceMask;
    if (at < first_ || size_t(at - first_) >= places_.size()) return nullptr;
    Place& p = places_[size_t(at - first_)];
    return p.used && p.handle == h ? &p : nullptr;
  }

  Id first_;
  Id first_generation_;
  const char* what_;
  std::vector<Place> places_;
  std::vector<size_t> free_;
};

}  // namespace nodempi
