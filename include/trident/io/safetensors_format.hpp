// trident/io/safetensors_format.hpp: the element types and tensor entries of safetensors files.
//
// Hugging Face's safetensors format: 8 bytes holding N, the header's length as a little-endian
// u64; N bytes of UTF-8 JSON, an object mapping each tensor's name to {"dtype", "shape",
// "data_offsets": [begin, end)} (byte offsets into the data section; a scalar has shape []),
// plus an optional "__metadata__" object of strings; then the data section: each tensor's
// elements, row-major and little-endian. This file holds what reader and writer share: the
// dtypes with their names and sizes, the C++ type stored as each, and a tensor's header entry.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/bf16.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trident's safetensors I/O copies raw little-endian bytes; this machine is not little-endian"
#endif

namespace trident::io {

// The format's element types, named as in the header: the ten trident names, then the rest of the
// format's set, so that a file holding them can still be opened.
enum class DType {
  F64,
  F32,
  BF16,
  F16,
  I64,
  I32,
  I16,
  I8,
  U8,
  BOOL,
  U64,
  U32,
  U16,
  F8_E5M2,
  F8_E4M3
};

namespace detail {
struct DTypeEntry {
  DType dtype;
  const char* name;  // as written in the header
  std::size_t size;  // bytes per element
};
inline constexpr DTypeEntry kDTypes[] = {
    {DType::F64, "F64", 8},   {DType::F32, "F32", 4},         {DType::BF16, "BF16", 2},
    {DType::F16, "F16", 2},   {DType::I64, "I64", 8},         {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},   {DType::I8, "I8", 1},           {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1}, {DType::U64, "U64", 8},         {DType::U32, "U32", 4},
    {DType::U16, "U16", 2},   {DType::F8_E5M2, "F8_E5M2", 1}, {DType::F8_E4M3, "F8_E4M3", 1}};

template <class T>
inline constexpr bool kNoDType = false;

inline std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The bytes of a tensor of `shape` and `dtype` into `bytes`; false when a dimension is negative
// or the element count or byte count does not fit in int64 (products taken left to right).
inline bool tensor_bytes(const std::vector<std::int64_t>& shape, std::size_t dtype_size,
                         std::size_t& bytes) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0 || (d != 0 && n > kMax / d)) return false;
    n *= d;
  }
  if (n > kMax / static_cast<std::int64_t>(dtype_size)) return false;
  bytes = static_cast<std::size_t>(n) * dtype_size;
  return true;
}

}  // namespace detail

constexpr const char* to_string(DType dtype) {
  for (const auto& e : detail::kDTypes)
    if (e.dtype == dtype) return e.name;
  return "?";
}

constexpr std::size_t size_of(DType dtype) {
  for (const auto& e : detail::kDTypes)
    if (e.dtype == dtype) return e.size;
  return 0;
}

// The dtype whose header name is `name` into `dtype`; false when there is none.
inline bool parse_dtype(const std::string& name, DType& dtype) {
  for (const auto& e : detail::kDTypes) {
    if (name != e.name) continue;
    dtype = e.dtype;
    return true;
  }
  return false;
}

// The dtype that stores a T. A type without one fails to compile.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, bf16>)
    return DType::BF16;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return DType::I16;
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return DType::I8;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return DType::U64;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return DType::U32;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return DType::U16;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return DType::U8;
  else
    static_assert(detail::kNoDType<T>, "no safetensors dtype stores this C++ type");
}

// T's bytes are exactly the format's bytes of dtype_of<T>() on this (little-endian) machine.
template <class T>
constexpr void check_storable() {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) == size_of(dtype_of<T>()),
                "T must be stored as the raw bytes of its safetensors dtype");
}

// One tensor as the header describes it.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // [] is a scalar
  std::size_t begin = 0, end = 0;   // bytes [begin, end) of the data section
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    return n;
  }
};

}  // namespace trident::io
