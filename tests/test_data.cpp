// Data sources: pre-tokenized token files (llm.c's layout, versions 1 and 2) read back to the
// ids written, sampled exactly as the same ids given in memory; every bad file refused with an
// Error naming the file and the numbers; a host app's own Sampler driving the trainer.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include <trident/models/gpt2/gpt2.hpp>

#include "parity.hpp"

using namespace trident;

namespace {
// Writes llm.c's layout by hand, byte by byte (little-endian), independently of the reader:
// 256 x int32 header {magic, version, count, 0...}, then the ids in 2 (v1) or 4 (v2) bytes.
// `count` defaults to ids.size(); `drop` bytes are cut from the end.
constexpr long kAll = std::numeric_limits<long>::min();
std::string write_file(const std::string& name, const std::vector<std::uint32_t>& ids,
                       std::int32_t version, std::int32_t magic = kTokenFileMagic,
                       long count = kAll, std::size_t drop = 0) {
  std::vector<unsigned char> bytes;
  auto put = [&](std::uint32_t x, int width) {
    for (int k = 0; k < width; ++k) bytes.push_back((x >> (8 * k)) & 0xff);
  };
  put(std::uint32_t(magic), 4);
  put(std::uint32_t(version), 4);
  put(std::uint32_t(count == kAll ? long(ids.size()) : count), 4);
  for (int k = 3; k < 256; ++k) put(0, 4);
  for (std::uint32_t id : ids) put(id, version == 1 ? 2 : 4);
  bytes.resize(bytes.size() - drop);
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("trident_test_data_" + std::to_string(test::world().rank()) + "_" + name))
          .string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

std::vector<std::uint32_t> ramp(int n, std::uint32_t vocab) {
  std::vector<std::uint32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (std::uint32_t(i) * 7919u + 3u) % vocab;
  return ids;
}
}  // namespace

TEST_CASE("token files, versions 1 (uint16) and 2 (uint32), sample as the same ids in memory") {
  for (std::int32_t version : {1, 2}) {
    const std::uint32_t vocab = version == 1 ? 50257 : 128256;  // GPT-2's and Llama 3's
    const std::vector<std::uint32_t> ids = ramp(200, vocab);
    const std::string path = write_file("v" + std::to_string(version) + ".bin", ids, version);
    const TokenSource file = TokenSource::from_file(path, 16);
    const TokenSource memory =
        TokenSource::from_tokens(std::vector<std::int32_t>(ids.begin(), ids.end()), "memory");
    INFO("version " << version);
    CHECK(!file.is_synthetic());
    CHECK(file.vocab() == memory.vocab());
    CHECK(file.vocab() == int(*std::max_element(ids.begin(), ids.end())) + 1);
    CHECK(file.vocab() > (version == 1 ? 256 : 65536));  // wide ids are read whole
    const Microbatch a = sample_rows(file, 9, 2, 0, 6, 16);
    const Microbatch b = sample_rows(memory, 9, 2, 0, 6, 16);
    CHECK(a.inputs == b.inputs);
    CHECK(a.targets == b.targets);
    // each row is a window of the file: input t + 1 follows input t in the written ids
    for (int row = 0; row < 6; ++row) {
      const auto at = std::find(ids.begin(), ids.end(), std::uint32_t(a.inputs[row]));
      REQUIRE(at != ids.end());
      for (int t = 0; t < 16; ++t) {
        CHECK(std::uint32_t(a.inputs[t * 6 + row]) == at[t]);
        CHECK(std::uint32_t(a.targets[t * 6 + row]) == at[t + 1]);
      }
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("bad token files: one Error naming the file and the numbers") {
  const std::vector<std::uint32_t> ids = ramp(40, 1000);
  struct Case {
    std::string name, expect;
    std::string path;
  };
  const std::vector<Case> cases = {
      {"short.bin",
       " declares 40 tokens of 2 bytes (1104 bytes with the header) but has 1103 bytes",
       write_file("short.bin", ids, 1, kTokenFileMagic, kAll, 1)},
      {"header.bin", " has 100 bytes, fewer than its 1024-byte header (256 x int32, llm.c layout)",
       write_file("header.bin", {}, 1, kTokenFileMagic, 0, 924)},
      {"version.bin",
       " has version 3 in its header; expected 1 (uint16 tokens) or 2 (uint32 tokens)",
       write_file("version.bin", ids, 3)},
      {"count.bin", " declares -5 tokens in its header",
       write_file("count.bin", ids, 2, kTokenFileMagic, -5)},
      {"long.bin", " declares 30 tokens of 4 bytes (1144 bytes with the header) but has 1184 bytes",
       write_file("long.bin", ids, 2, kTokenFileMagic, 30)},
      {"seq.bin", " has 10 tokens, fewer than one sequence of 16 + 1",
       write_file("seq.bin", ramp(10, 1000), 1)},
      {"huge.bin",
       " has token id 4294967295 at position 1, above the largest supported id 2147483647",
       write_file("huge.bin",
                  {5, 4294967295u, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18},
                  2)},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK_THROWS_WITH_AS(TokenSource::from_file(c.path, 16),
                         ("the token file '" + c.path + "'" + c.expect).c_str(), Error);
    std::remove(c.path.c_str());
  }
  // ids at or above the model's vocabulary: the trainer refuses the data, naming it
  std::vector<std::uint32_t> wide = ramp(100, 256);
  wide[50] = 299;
  const std::string path = write_file("vocab.bin", wide, 1);
  gpt2::Options o = test::small_options({1, 1, 1}, 2);
  o.model.vocab = 256;
  o.model.seq = 8;
  CHECK_THROWS_WITH_AS(
      gpt2::Trainer<double>(test::world(), o, TokenSource::from_file(path, 8)),
      ("the data '" + path + "' has token ids up to 299, at or above the model's vocabulary of 256")
          .c_str(),
      Error);
  std::remove(path.c_str());
}

TEST_CASE("a host app's own Sampler: sampled and trained on exactly as the built-in source") {
  auto comm = test::first_ranks(1, test::current_test_name());
  if (!comm) return;
  gpt2::Options o = test::small_options({1, 1, 1}, 2);
  const TokenSource builtin = TokenSource::synthetic(o.model.vocab);
  int calls = 0;  // the trainer reaches the host's function, not a copy of the built-in
  const TokenSource host(
      "host", o.model.vocab,
      [&](std::uint64_t seed, int step, int row, int seq, std::int32_t* in, std::int32_t* tg) {
        ++calls;
        builtin.sample(seed, step, row, seq, in, tg);
      });
  CHECK(!host.is_synthetic());
  CHECK(sample_rows(host, 3, 1, 2, 4, 16).inputs == sample_rows(builtin, 3, 1, 2, 4, 16).inputs);
  gpt2::Trainer<double> a(*comm, o, builtin), b(*comm, o, host);
  calls = 0;
  for (int s = 0; s < 2; ++s) CHECK(a.step().loss == b.step().loss);
  CHECK(calls == 2 * o.batch);
  // ids outside the declared vocab are refused when sampled, naming the source and the row
  const TokenSource bad(
      "bad", 10, [](std::uint64_t, int, int row, int seq, std::int32_t* in, std::int32_t* tg) {
        for (int t = 0; t < seq; ++t) in[t] = tg[t] = row == 1 ? 10 : 0;
      });
  CHECK_THROWS_WITH_AS(sample_rows(bad, 0, 4, 0, 2, 8),
                       "the data 'bad' gave token 10 at step 4, row 1, outside its vocab [0, 10)",
                       Error);
}
