// trident/core/matrix.hpp: the dense types every kernel uses (Eigen, row-major).
//
// Activations are (tokens, features) matrices in Megatron's [s, b, h] order: row t*B + b holds
// token t of sequence b, so a slice of the sequence is a contiguous block of rows.
#pragma once

#include "../detail/eigen.hpp"

namespace trident {

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <class T>
using RowVector = Eigen::Matrix<T, 1, Eigen::Dynamic>;

// Views over existing buffers (no copies).
template <class T>
using MatMap = Eigen::Map<Matrix<T>>;
template <class T>
using CMatMap = Eigen::Map<const Matrix<T>>;
template <class T>
using VecMap = Eigen::Map<Vector<T>>;
template <class T>
using CVecMap = Eigen::Map<const Vector<T>>;
template <class T>
using RowMap = Eigen::Map<RowVector<T>>;
template <class T>
using CRowMap = Eigen::Map<const RowVector<T>>;

// A row-major view with a row stride, e.g. one head's columns inside a fused QKV matrix.
template <class T>
using StridedMap = Eigen::Map<Matrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using CStridedMap = Eigen::Map<const Matrix<T>, 0, Eigen::OuterStride<>>;

}  // namespace trident
