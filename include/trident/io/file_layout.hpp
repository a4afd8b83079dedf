// trident/io/file_layout.hpp: how a model's parameters are laid out in weight files, for a model
// whose exchange format is another framework's (Llama: Hugging Face's LlamaForCausalLM).
//
// A parameter of global shape (rows, cols) — a linear layer's weight is [in, out] in trident
// (nn/linear.hpp) — is stored as one or more tensors of the file: its columns cut into equal
// pieces, each stored as it is or transposed ([out, in], PyTorch's nn.Linear). A model declares
// the layout with an optional member (model/model.hpp)
//     std::vector<FileTensor> file_tensors(const ParamSpec&) const;
// without it, each parameter is one tensor of its own name and shape.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../zero/params.hpp"

namespace trident {

struct FileTensor {
  std::string name;
  bool transposed = false;  // stored [cols, rows]: PyTorch's [out, in] for an [in, out] weight
};

template <class M, class = void>
struct declares_file_layout : std::false_type {};
template <class M>
struct declares_file_layout<
    M, std::void_t<decltype(std::declval<const M&>().file_tensors(ParamSpec{}))>> : std::true_type {
};

// The file tensors parameter p is stored as (checked: pieces divide the columns, only a
// matrix is transposed).
template <class M>
std::vector<FileTensor> file_tensors(const M& model, const ParamSpec& p) {
  if constexpr (!declares_file_layout<M>::value) {
    return {{p.name, false}};
  } else {
    std::vector<FileTensor> pieces = model.file_tensors(p);
    const std::int64_t cols = p.shape.empty() ? 1 : p.shape.back();
    require(!pieces.empty() && cols % std::int64_t(pieces.size()) == 0,
            "file layout of '" + p.name + "': " + std::to_string(pieces.size()) +
                " pieces do not divide its " + std::to_string(cols) + " columns");
    for (const FileTensor& f : pieces)
      require(!f.transposed || p.shape.size() == 2,
              "file layout of '" + p.name + "': only a matrix can be stored transposed");
    return pieces;
  }
}

// One file tensor's shape, of parameter p cut into n pieces.
inline std::vector<std::int64_t> file_shape(const ParamSpec& p, const FileTensor& f, int n) {
  if (p.shape.empty() || (n == 1 && !f.transposed)) return p.shape;
  std::vector<std::int64_t> s = p.shape;
  s.back() /= n;
  if (f.transposed) std::swap(s[0], s[1]);
  return s;
}

// Element (row r, column c) of piece k's file tensor <-> element of the whole parameter; rows
// = all leading dimensions. visit(file_index, parameter_index) for every element of piece k.
template <class F>
void for_each_file_element(const ParamSpec& p, const FileTensor& f, int n, int k, F&& visit) {
  const std::int64_t cols = p.shape.empty() ? 1 : p.shape.back(), width = cols / n;
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < p.shape.size(); ++d) rows *= p.shape[d];
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < width; ++c)
      visit(f.transposed ? c * rows + r : r * width + c, r * cols + k * width + c);
}

}  // namespace trident
