// trident/data/token_file.hpp: pre-tokenized token files, the layout of llm.c (Karpathy,
// github.com/karpathy/llm.c, write_datafile in its data_common.py), so a corpus tokenized
// once by any tokenizer trains as it is.
//
// Layout, all little-endian:
//   bytes [0, 1024)   header: 256 x int32
//                       header[0] = 20240520 (the magic)
//                       header[1] = 1 (tokens are uint16) or 2 (tokens are uint32)
//                       header[2] = the number of tokens n; the rest is zero
//   bytes [1024, ...) n token ids, 2 bytes each (version 1) or 4 bytes each (version 2)
// The file is exactly 1024 + n * width bytes. Any other file (no magic in its first 4 bytes) is
// byte text (data/tokens.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace trident {

constexpr std::int32_t kTokenFileMagic = 20240520;
constexpr std::size_t kTokenFileHeaderBytes = 256 * 4;

// The unsigned little-endian integer of `width` bytes at p.
inline std::uint32_t read_little_endian(const unsigned char* p, int width) {
  std::uint32_t x = 0;
  for (int k = width - 1; k >= 0; --k) x = (x << 8) | p[k];
  return x;
}

// Whether a file's bytes begin with the token file's magic.
inline bool is_token_file(const std::vector<unsigned char>& bytes) {
  return bytes.size() >= 4 && std::int32_t(read_little_endian(bytes.data(), 4)) == kTokenFileMagic;
}

// The token ids of a token file's bytes (is_token_file). Throws Error naming the file and the
// numbers when the header is bad, the file is shorter or longer than its header says, it holds
// no more than one sequence of `seq` + 1 tokens, or an id does not fit an int32.
inline std::vector<std::int32_t> parse_token_file(const std::string& path,
                                                  const std::vector<unsigned char>& bytes,
                                                  int seq) {
  const std::string file = "the token file '" + path + "'";
  require(bytes.size() >= kTokenFileHeaderBytes,
          file + " has " + std::to_string(bytes.size()) + " bytes, fewer than its " +
              std::to_string(kTokenFileHeaderBytes) + "-byte header (256 x int32, llm.c layout)");
  const auto version = std::int32_t(read_little_endian(bytes.data() + 4, 4));
  const auto count = std::int32_t(read_little_endian(bytes.data() + 8, 4));
  require(version == 1 || version == 2,
          file + " has version " + std::to_string(version) +
              " in its header; expected 1 (uint16 tokens) or 2 (uint32 tokens)");
  require(count >= 0, file + " declares " + std::to_string(count) + " tokens in its header");
  const int width = version == 1 ? 2 : 4;
  const std::size_t expected = kTokenFileHeaderBytes + std::size_t(count) * width;
  require(bytes.size() == expected,
          file + " declares " + std::to_string(count) + " tokens of " + std::to_string(width) +
              " bytes (" + std::to_string(expected) + " bytes with the header) but has " +
              std::to_string(bytes.size()) + " bytes");
  require(count > seq + 1, file + " has " + std::to_string(count) +
                               " tokens, fewer than one sequence of " + std::to_string(seq) +
                               " + 1");
  std::vector<std::int32_t> tokens(count);
  const unsigned char* p = bytes.data() + kTokenFileHeaderBytes;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::uint32_t id = read_little_endian(p + i * width, width);
    require(id <= std::uint32_t(std::numeric_limits<std::int32_t>::max()),
            file + " has token id " + std::to_string(id) + " at position " + std::to_string(i) +
                ", above the largest supported id " +
                std::to_string(std::numeric_limits<std::int32_t>::max()));
    tokens[i] = std::int32_t(id);
  }
  return tokens;
}

}  // namespace trident
