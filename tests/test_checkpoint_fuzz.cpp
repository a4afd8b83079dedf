// Seeded mutation fuzzing of the two readers of untrusted bytes: the safetensors reader and the
// checkpoint index (alone, and read through CheckpointReader with its shard). Each input is a
// valid file mutated — bits flipped, bytes overwritten, cut short, bytes inserted, header numbers
// edited — and must either read or be refused with trident::Error: no other exception, no crash,
// no hang (the CTest timeout).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <trident/io/checkpoint_reader.hpp>
#include <trident/models/gpt2/gpt2.hpp>

#include "mpi_test.hpp"

using namespace trident;
namespace fs = std::filesystem;

namespace {
std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// One random mutation of `s` (a valid input), described in `what` for the failure message.
std::string mutate(std::string s, std::mt19937_64& rng, std::string& what) {
  auto pick = [&](std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; };
  static const char* numbers[] = {"0",
                                  "1",
                                  "-1",
                                  "7",
                                  "4294967296",
                                  "1e308",
                                  "18446744073709551615",
                                  "9223372036854775807",
                                  "0.5",
                                  "\"x\""};
  switch (rng() % 6) {
    case 0:  // bit flips
      for (int k = 1 + int(rng() % 8); k > 0 && !s.empty(); --k)
        s[pick(s.size())] ^= char(1 << (rng() % 8));
      what = "bit flips";
      break;
    case 1:  // bytes overwritten with structural characters
      for (int k = 1 + int(rng() % 4); k > 0 && !s.empty(); --k)
        s[pick(s.size())] = "{}[]\",:0 9\x80"[rng() % 12];
      what = "bytes overwritten";
      break;
    case 2:  // cut short
      s.resize(pick(s.size()));
      what = "truncated to " + std::to_string(s.size());
      break;
    case 3:  // bytes inserted
      s.insert(pick(s.size() + 1), std::string(1 + rng() % 16, char(rng())));
      what = "bytes inserted";
      break;
    case 4: {  // a number of the JSON replaced by an edge case
      std::vector<std::size_t> digits;
      for (std::size_t k = 0; k < s.size(); ++k)
        if (s[k] >= '0' && s[k] <= '9' && (k == 0 || s[k - 1] < '0' || s[k - 1] > '9'))
          digits.push_back(k);
      if (digits.empty()) break;
      const std::size_t at = digits[pick(digits.size())];
      std::size_t end = at;
      while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
      s.replace(at, end - at, numbers[rng() % 10]);
      what = "a number replaced at " + std::to_string(at);
      break;
    }
    default:  // a span duplicated (repeated keys, longer arrays)
      if (s.size() > 2) {
        const std::size_t a = pick(s.size()), n = 1 + pick(std::min<std::size_t>(64, s.size() - a));
        s.insert(pick(s.size()), s.substr(a, n));
      }
      what = "a span duplicated";
  }
  return s;
}

// A small checkpoint: one shard of F64, F32 and BF16 pieces; "a" [3, 5] in three row boxes,
// "b" [7] in two.
fs::path make_checkpoint(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  io::SafetensorsWriter w;
  const double a[15] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const float b[7] = {1, 2, 3, 4, 5, 6, 7};
  const bf16 c[2] = {bf16(1.5f), bf16(-2.0f)};
  w.add("a0", a, {1, 5});
  w.add("a1", a + 5, {2, 5});
  w.add("a2", a, {0, 5});
  w.add("b0", b, {3});
  w.add("b1", b + 3, {4});
  w.add("c", c, {2});
  w.set_metadata("format", "pt");
  w.write((dir / "shard.safetensors").string());
  io::CheckpointIndex x;
  x.model = gpt2::Model(gpt2::Config{11, 4, 1, 8, 2, 3}).describe();
  x.shards.push_back({"shard.safetensors", fs::file_size(dir / "shard.safetensors"),
                      io::file_checksum(dir / "shard.safetensors")});
  x.tensors["a"] = {
      io::DType::F64,
      {3, 5},
      {{0, "a0", {0, 0}, {1, 5}}, {0, "a1", {1, 0}, {2, 5}}, {0, "a2", {3, 0}, {0, 5}}}};
  x.tensors["b"] = {io::DType::F32, {7}, {{0, "b0", {0}, {3}}, {0, "b1", {3}, {4}}}};
  x.tensors["c"] = {io::DType::BF16, {2}, {{0, "c", {0}, {2}}}};
  write_bytes(dir / "index.json", io::to_json(x));
  return dir;
}

// Runs read(); true when it read, false when it was refused with Error. Anything else fails.
template <class F>
bool reads(F&& read, const std::string& what, std::uint64_t input) {
  try {
    read();
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    FAIL("input " << input << " (" << what << "): not a trident::Error: " << e.what());
  }
  return false;
}
}  // namespace

TEST_CASE("fuzz: 100,000 mutated safetensors files, 100,000 indexes, 5,000 read whole") {
  TRIDENT_RANKS(1, comm);
  (void)comm;
  const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  const fs::path dir = make_checkpoint(base / ("trident_fuzz_" + std::to_string(getpid())));
  const std::string shard = bytes_of(dir / "shard.safetensors"),
                    index = bytes_of(dir / "index.json");
  io::CheckpointReader valid(dir);  // the seeds are valid
  CHECK(valid.read<double>("a", {3, 5})[14] == 15);
  std::mt19937_64 rng(20261203);
  std::string what;
  int accepted[3] = {0, 0, 0};
  const fs::path mutated = dir / "mutated.safetensors";
  for (std::uint64_t i = 0; i < 100000; ++i) {
    write_bytes(mutated, mutate(shard, rng, what));
    accepted[0] += reads(
        [&] {
          const io::SafetensorsReader r(mutated.string());
          for (const std::string& name : r.names())
            trident::detail::read_as<double>(r, name, r.info(name).shape);
        },
        what, i);
  }
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const std::string text = mutate(index, rng, what);
    accepted[1] += reads([&] { io::parse_index(text, "index"); }, what, i);
  }
  for (std::uint64_t i = 0; i < 5000; ++i) {  // the index mutated, read through the reader
    write_bytes(dir / "index.json", mutate(index, rng, what));
    accepted[2] += reads(
        [&] {
          io::CheckpointReader r(dir);
          for (const auto& [name, t] : r.index().tensors) r.read<double>(name, t.shape);
        },
        what, i);
  }
  MESSAGE("accepted after mutation: " << accepted[0] << " safetensors files of 100000, "
                                      << accepted[1] << " indexes of 100000, " << accepted[2]
                                      << " whole reads of 5000");
  fs::remove_all(dir);
}
