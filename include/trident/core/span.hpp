// trident/core/span.hpp: a minimal contiguous view (C++17 has no std::span).
#pragma once

#include <cstddef>
#include <type_traits>

namespace trident {

// A pointer and a length. Built from anything with data() and size(): std::vector,
// Eigen matrices and maps (contiguous storage), std::array.
template <class T>
class Span {
 public:
  Span() = default;
  Span(T* data, std::size_t size) : data_(data), size_(size) {}
  template <class C, class = std::enable_if_t<
                         std::is_convertible_v<decltype(std::declval<C&>().data()), T*>>>
  Span(C& container)  // NOLINT(google-explicit-constructor)
      : data_(container.data()), size_(static_cast<std::size_t>(container.size())) {}
  template <class U, class = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  Span(Span<U> other) : data_(other.data()), size_(other.size()) {}  // NOLINT

  T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() const { return data_; }
  T* end() const { return data_ + size_; }
  Span subspan(std::size_t offset, std::size_t count) const { return {data_ + offset, count}; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class C>
Span(C&) -> Span<std::remove_pointer_t<decltype(std::declval<C&>().data())>>;

}  // namespace trident
