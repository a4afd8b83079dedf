// trident/tensor/sharded_tensor.hpp: a tensor spread over one mesh axis.
//
// A ShardedTensor holds this rank's block (row-major, padding included) and the ShardLayout
// that says where the block sits in the global tensor. Blocks are made from a global tensor,
// or from a function of the global element index (how parameters are initialised, so that any
// rank generates exactly its block: ARCHITECTURE §3). A ShardedView is the same pair without
// ownership: a layout over a buffer someone else holds (a stage's activations), so layers and
// redistribute() work on the hot path without copying.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "../core/matrix.hpp"
#include "placement.hpp"

namespace trident {

// This rank's block `data` (row-major, layout.local_numel() elements) of a tensor laid out by
// `layout`. T may be const.
template <class T>
struct ShardedView {
  T* data = nullptr;
  ShardLayout layout;

  ShardedView() = default;
  ShardedView(T* d, ShardLayout l) : data(d), layout(std::move(l)) {}
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  ShardedView(const ShardedView<U>& v) : data(v.data), layout(v.layout) {}  // to const
};

template <class T>
class ShardedTensor {
 public:
  ShardedTensor() = default;
  explicit ShardedTensor(ShardLayout layout)
      : layout_(std::move(layout)),
        local_(Matrix<T>::Zero(layout_.local_rows(), layout_.local_cols())) {}

  // This rank's block of `global` (rows, cols) under `layout`. Padding is zero.
  static ShardedTensor from_global(const Matrix<T>& global, ShardLayout layout) {
    return from_index(std::move(layout), [&](std::int64_t k) { return global.data()[k]; });
  }
  // This rank's block with element value(global row-major offset). Padding is zero.
  template <class F>
  static ShardedTensor from_index(ShardLayout layout, F&& value) {
    ShardedTensor t(std::move(layout));
    fill_local(t.layout_, t.local_.data(), value);
    return t;
  }

  const ShardLayout& layout() const { return layout_; }
  const Matrix<T>& local() const { return local_; }
  Matrix<T>& local() { return local_; }
  ShardedView<T> view() { return {local_.data(), layout_}; }
  ShardedView<const T> view() const { return {local_.data(), layout_}; }
  operator ShardedView<T>() { return view(); }
  operator ShardedView<const T>() const { return view(); }

 private:
  ShardLayout layout_;
  Matrix<T> local_;
};

// Writes value(global offset) into this rank's block `out` of `layout` (0 for padding).
// The one place where local elements meet global indices.
template <class T, class F>
void fill_local(const ShardLayout& layout, T* out, F&& value) {
  const std::int64_t rows = layout.local_rows(), cols = layout.local_cols();
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t g = layout.global_offset(i, j, layout.rank());
      out[i * cols + j] = g < 0 ? T(0) : static_cast<T>(value(g));
    }
}

}  // namespace trident
