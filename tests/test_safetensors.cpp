// safetensors: bit-exact round trips, a file built byte by byte from the format's definition,
// the writer's exact bytes and alignment, and a clear Error for every kind of bad file.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <trident/io/safetensors.hpp>

#include "mpi_test.hpp"

using namespace trident;
using namespace trident::io;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temporary directory, removed with everything in it.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int count = 0;
    dir = fs::temp_directory_path() /
          ("trident_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The 8 bytes of `n` as a little-endian u64, built by hand.
std::string u64_le(std::uint64_t n) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes;
}

// A safetensors file as the format defines it: length, header, data.
std::string file_bytes(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

template <class T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// The message of the trident::Error that `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Opening a file holding `header` then `data` fails with a message holding the path and `parts`.
void check_bad_file(const TempDir& tmp, const std::string& header, const std::string& data,
                    const std::vector<std::string>& parts) {
  const std::string path = tmp.file("bad.safetensors");
  write_file(path, file_bytes(header, data));
  const std::string message = error_of([&] { SafetensorsReader reader(path); });
  INFO("header: ", header, "\nmessage: ", message);
  CHECK(message.rfind(path + ": ", 0) == 0);
  for (const std::string& part : parts) CHECK(message.find(part) != std::string::npos);
}

// One tensor entry of a header.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":" + dtype + ",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

}  // namespace

TEST_CASE("round trip is bit-exact for F64, F32, BF16, I32, I64 and a scalar, with metadata") {
  TempDir tmp;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> f64 = {
      0.0, -0.0, 1.0 / 3.0, -inf, inf, 4.9e-324, std::numeric_limits<double>::quiet_NaN()};
  const std::vector<float> f32 = {1.5f, -2.25f, 1e-45f, 3.4e38f, -0.0f, 0.1f};
  std::vector<bf16> b16(12);
  for (std::size_t i = 0; i < b16.size(); ++i) b16[i].bits = std::uint16_t(0x7fc1 + 977 * i);
  const std::vector<std::int32_t> i32 = {std::numeric_limits<std::int32_t>::min(), -1, 0, 7,
                                         std::numeric_limits<std::int32_t>::max(), 42};
  const std::vector<std::int64_t> i64 = {std::numeric_limits<std::int64_t>::min(), 5};
  const double scalar = -6.5;

  SafetensorsWriter writer;
  writer.add("h.f64", f64.data(), {7});
  writer.add("h.f32", f32.data(), {2, 3});
  writer.add("h.bf16", b16.data(), {3, 2, 2});
  writer.add("a.i32", i32.data(), {3, 2});
  writer.add("z.i64", i64.data(), {2, 1});
  writer.add("scalar", &scalar, {});
  writer.add("empty", f32.data(), {0, 4});
  writer.set_metadata("format", "pt");
  writer.set_metadata("step", "1200");
  const std::string path = tmp.file("model.safetensors");
  writer.write(path);

  SafetensorsReader reader(path);
  CHECK(reader.path() == path);
  CHECK(reader.names() ==
        std::vector<std::string>{"a.i32", "empty", "h.bf16", "h.f32", "h.f64", "scalar", "z.i64"});
  CHECK(reader.metadata() ==
        std::map<std::string, std::string>{{"format", "pt"}, {"step", "1200"}});
  CHECK(reader.contains("h.f32"));
  CHECK_FALSE(reader.contains("h.f16"));
  CHECK(reader.info("h.bf16").dtype == DType::BF16);
  CHECK(reader.info("h.bf16").shape == std::vector<std::int64_t>{3, 2, 2});
  CHECK(reader.info("h.bf16").numel() == 12);
  CHECK(reader.info("scalar").shape.empty());
  CHECK(reader.info("scalar").numel() == 1);
  CHECK(reader.info("empty").numel() == 0);

  CHECK(bytes_of(reader.read<double>("h.f64", {7})) == bytes_of(f64));
  CHECK(bytes_of(reader.read<float>("h.f32", {2, 3})) == bytes_of(f32));
  CHECK(bytes_of(reader.read<bf16>("h.bf16", {3, 2, 2})) == bytes_of(b16));
  CHECK(reader.read<std::int32_t>("a.i32", {3, 2}) == i32);
  CHECK(reader.read<std::int64_t>("z.i64", {2, 1}) == i64);
  CHECK(reader.read<double>("scalar", {}) == std::vector<double>{scalar});
  CHECK(reader.read<float>("empty", {0, 4}).empty());
  double into = 0;
  reader.read_into("scalar", &into, {});
  CHECK(into == scalar);
}

TEST_CASE("a file built byte by byte from the format's definition reads correctly") {
  TempDir tmp;
  // Header keys out of offset order, whitespace and newlines, no padding, an empty tensor and a
  // field the format does not know; data written byte by byte, little-endian.
  const std::string header =
      "{ \"w\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [8, 24]},\n"
      "  \"__metadata__\": {\"format\": \"pt\", \"note\": \"caf\xc3\xa9\"},\n"
      "  \"n\": {\"data_offsets\": [0, 8], \"shape\": [], \"dtype\": \"I64\"},\n"
      "  \"e\": {\"dtype\": \"F64\", \"shape\": [0, 3], \"data_offsets\": [24, 24]},\n"
      "  \"h\": {\"dtype\": \"BF16\", \"shape\": [3], \"data_offsets\": [24, 30], \"x\": 1}}";
  const std::string data = std::string("\xfe\xff\xff\xff\xff\xff\xff\xff", 8)  // n = -2
                           + std::string("\x00\x00\x80\x3f", 4)                // w = 1.0f
                           + std::string("\x00\x00\x00\x40", 4)                //     2.0f
                           + std::string("\x00\x00\x00\xbf", 4)                //    -0.5f
                           + std::string("\x00\x00\x80\x3e", 4)                //     0.25f
                           + std::string("\x80\x3f\x00\xc0\x00\x3f", 6);       // h = 1, -2, 0.5
  const std::string path = tmp.file("by_hand.safetensors");
  write_file(path, file_bytes(header, data));

  SafetensorsReader reader(path);
  CHECK(reader.names() == std::vector<std::string>{"e", "h", "n", "w"});
  CHECK(reader.metadata().at("format") == "pt");
  CHECK(reader.metadata().at("note") == "caf\xc3\xa9");
  CHECK(reader.info("w").begin == 8);
  CHECK(reader.info("w").end == 24);
  CHECK(reader.read<std::int64_t>("n", {}) == std::vector<std::int64_t>{-2});
  CHECK(reader.read<float>("w", {2, 2}) == std::vector<float>{1.0f, 2.0f, -0.5f, 0.25f});
  const std::vector<bf16> h = reader.read<bf16>("h", {3});
  CHECK(to_float(h[0]) == 1.0f);
  CHECK(to_float(h[1]) == -2.0f);
  CHECK(to_float(h[2]) == 0.5f);
  CHECK(reader.read<double>("e", {0, 3}).empty());
}

TEST_CASE("the writer's bytes: the reference layout, 8-byte aligned data, valid JSON") {
  TempDir tmp;
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};
  // One F32 tensor of shape [1, 2, 3]: a 64-byte header with no padding, then the floats.
  SafetensorsWriter one;
  one.add("attn.0", x.data(), {1, 2, 3});
  one.write(tmp.file("one.safetensors"));
  CHECK(read_file(tmp.file("one.safetensors")) ==
        u64_le(64) + "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}" +
            bytes_of(x));
  // A 65-byte JSON text is padded with 7 spaces to 72.
  SafetensorsWriter padded;
  padded.add("attn0", x.data(), {1, 1, 2, 3});
  padded.write(tmp.file("padded.safetensors"));
  CHECK(read_file(tmp.file("padded.safetensors")) ==
        u64_le(72) + "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}" +
            std::string(7, ' ') + bytes_of(x));
  // No tensors at all: "{}" and 6 spaces.
  SafetensorsWriter none;
  none.write(tmp.file("none.safetensors"));
  CHECK(read_file(tmp.file("none.safetensors")) == u64_le(8) + "{}      ");
  CHECK(SafetensorsReader(tmp.file("none.safetensors")).names().empty());

  // Mixed dtypes with metadata: the header is a multiple of 8 bytes of valid JSON, and every
  // tensor starts at a multiple of its element size.
  const std::vector<std::int8_t> i8 = {1, 2, 3};
  const std::vector<bf16> b(5, bf16(1.5f));
  const std::vector<double> d = {1, 2};
  SafetensorsWriter mixed;
  mixed.add("a", i8.data(), {3});
  mixed.add("b", b.data(), {5});
  mixed.add("c", x.data(), {6});
  mixed.add("d", d.data(), {2});
  mixed.set_metadata("k", "v");
  const std::string path = tmp.file("mixed.safetensors");
  mixed.write(path);
  const std::string bytes = read_file(path);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  CHECK(n % 8 == 0);
  REQUIRE(8 + n <= bytes.size());
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header.at("__metadata__") == nlohmann::json{{"k", "v"}});
  std::uint64_t data_bytes = 0;
  for (const char* name : {"a", "b", "c", "d"}) {
    const nlohmann::json& t = header.at(name);
    DType dtype = DType::BOOL;
    REQUIRE(parse_dtype(t.at("dtype").get<std::string>(), dtype));
    const auto begin = t.at("data_offsets")[0].get<std::uint64_t>();
    const auto end = t.at("data_offsets")[1].get<std::uint64_t>();
    CHECK(begin % size_of(dtype) == 0);
    data_bytes += end - begin;
  }
  CHECK(8 + n + data_bytes == bytes.size());
  SafetensorsReader reader(path);
  CHECK(reader.read<std::int8_t>("a", {3}) == i8);
  CHECK(reader.read<double>("d", {2}) == d);
}

TEST_CASE("a bad file is an Error naming the file and what is wrong, never a crash") {
  TempDir tmp;
  const std::string missing = tmp.file("missing.safetensors");
  CHECK(error_of([&] { SafetensorsReader r(missing); }) == missing + ": no such file");
  CHECK(error_of([&] { SafetensorsReader r(tmp.dir.string()); }) ==
        tmp.dir.string() + ": not a regular file");

  const std::string path = tmp.file("bad.safetensors");
  write_file(path, std::string("\x05\x00\x00\x00\x00", 5));
  CHECK(error_of([&] { SafetensorsReader r(path); }).find(path + ": the file has 5 bytes") == 0);
  write_file(path, u64_le(100) + "{\"a\":1}");
  CHECK(error_of([&] { SafetensorsReader r(path); }) ==
        path + ": header length 100 exceeds the 7 bytes that follow it in the file");
  write_file(path, u64_le(std::numeric_limits<std::uint64_t>::max()) + "{}");
  CHECK(error_of([&] { SafetensorsReader r(path); }).find("exceeds the format's limit") !=
        std::string::npos);
}

namespace {
const std::string f32x2 = std::string(8, '\0');  // the data of an F32 tensor of shape [2]
std::string ok_entry(const std::string& name) {
  return entry(name, "\"F32\"", "[2]", "[0,8]");
}
}  // namespace

TEST_CASE("a header that is not the format's JSON object is an Error naming what is wrong") {
  TempDir tmp;
  const auto ok = ok_entry;
  check_bad_file(tmp, "{\"a\": ", "", {"the header is not valid JSON"});
  check_bad_file(tmp, "{\"a\\xff\": 1}", "", {"the header is not valid JSON"});
  check_bad_file(tmp, "{\"\xff\": {}}", "", {"the header is not valid JSON"});
  check_bad_file(tmp, "[1, 2]", "", {"not a JSON object"});
  check_bad_file(tmp, "  {}", "", {"not a JSON object beginning with '{'"});
  check_bad_file(tmp, "{" + ok("a") + "," + ok("a") + "}", f32x2, {"repeats the key 'a'"});
  check_bad_file(tmp,
                 "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],"
                 "\"data_offsets\":[0,8]}}",
                 f32x2, {"repeats the key 'dtype'"});
  check_bad_file(tmp, "{\"__metadata__\": [1]}", "", {"\"__metadata__\" is not a JSON object"});
  check_bad_file(tmp, "{\"__metadata__\": {\"k\": 3}}", "", {"entry 'k' is not a string"});
  check_bad_file(tmp, "{\"a\": 5}", "", {"tensor 'a'", "not a JSON object"});
  check_bad_file(tmp, "{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2,
                 {"tensor 'a'", "no \"dtype\""});
  check_bad_file(tmp, "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", f32x2,
                 {"tensor 'a'", "no \"shape\""});
  check_bad_file(tmp, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", f32x2,
                 {"tensor 'a'", "no \"data_offsets\""});
}

TEST_CASE("a tensor entry with a bad dtype, shape or data_offsets is an Error naming the tensor") {
  TempDir tmp;
  const auto ok = ok_entry;
  check_bad_file(tmp, "{" + entry("a", "4", "[2]", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "\"dtype\" is not a string"});
  check_bad_file(tmp, "{" + entry("a", "\"F128\"", "[2]", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "unknown dtype 'F128'"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "2", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "\"shape\" is not an array"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[-2]", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "\"shape\" holds -2"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[2.0]", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "\"shape\" holds 2.0"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[2]", "[8]") + "}", f32x2,
                 {"tensor 'a'", "\"data_offsets\" [8] is not two non-negative integers"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[2]", "[\"0\",\"8\"]") + "}", f32x2,
                 {"tensor 'a'", "is not two non-negative integers"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[2]", "[0,-8]") + "}", f32x2,
                 {"tensor 'a'", "is not two non-negative integers"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[2]", "[0,16]") + "}", f32x2,
                 {"tensor 'a'", "data_offsets [0,16] reach past the end of the data section"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[2]", "[8,0]") + "}", f32x2,
                 {"tensor 'a'", "end before they begin"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[3]", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "hold 8 bytes, but shape [3] of F32 needs 12"});
  check_bad_file(tmp, "{" + entry("a", "\"F64\"", "[2]", "[0,8]") + "}", f32x2,
                 {"tensor 'a'", "shape [2] of F64 needs 16"});
  check_bad_file(
      tmp, "{" + entry("a", "\"F32\"", "[4611686018427387904,4611686018427387904]", "[0,8]") + "}",
      f32x2, {"tensor 'a'", "is too large"});
  check_bad_file(tmp, "{" + ok("a") + "," + entry("b", "\"F32\"", "[2]", "[4,12]") + "}",
                 std::string(12, '\0'), {"'a' [0, 8] and 'b' [4, 12] overlap"});
  check_bad_file(tmp, "{" + ok("a") + "," + entry("b", "\"F32\"", "[1]", "[12,16]") + "}",
                 std::string(16, '\0'), {"bytes [8, 12) of the data section belong to no tensor"});
  check_bad_file(tmp, "{" + ok("a") + "}", std::string(11, '\0'),
                 {"bytes [8, 11) of the data section belong to no tensor"});
  check_bad_file(tmp, "{" + entry("a", "\"F32\"", "[1]", "[4,8]") + "}", f32x2,
                 {"bytes [0, 4) of the data section belong to no tensor"});
}

TEST_CASE("reading a missing tensor, a wrong shape or a wrong dtype is an Error") {
  TempDir tmp;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  SafetensorsWriter writer;
  writer.add("w", x.data(), {2, 3});
  const std::string path = tmp.file("w.safetensors");
  writer.write(path);
  SafetensorsReader reader(path);
  CHECK(error_of([&] { reader.info("v"); }) == path + ": no tensor 'v'");
  CHECK(error_of([&] { reader.read<float>("v", {2, 3}); }) == path + ": no tensor 'v'");
  CHECK(error_of([&] {
          reader.read<float>("w", {3, 2});
        }) == path + ": tensor 'w' has shape [2, 3], expected [3, 2]");
  CHECK(error_of([&] { reader.read<float>("w", {6}); }) ==
        path + ": tensor 'w' has shape [2, 3], expected [6]");
  std::vector<double> d(6);
  CHECK(error_of([&] {
          reader.read_into("w", d.data(), {2, 3});
        }) == path + ": tensor 'w' has dtype F32, expected F64");
  CHECK(error_of([&] {
          reader.read<bf16>("w", {2, 3});
        }) == path + ": tensor 'w' has dtype F32, expected BF16");
  // The file shrinks after it was opened: reading its data is an Error, not garbage.
  write_file(path, read_file(path).substr(0, 8 + reader.info("w").begin + 4));
  std::vector<float> out(6);
  CHECK(error_of([&] {
          reader.read_into("w", out.data(), {2, 3});
        }).find("cannot read") != std::string::npos);
}

TEST_CASE("the writer refuses duplicate names, bad shapes and unwritable paths") {
  TempDir tmp;
  const std::vector<float> x = {1, 2};
  SafetensorsWriter writer;
  writer.add("w", x.data(), {2});
  CHECK(error_of([&] { writer.add("w", x.data(), {2}); }).find("tensor 'w' was already added") !=
        std::string::npos);
  CHECK(error_of([&] { writer.add("__metadata__", x.data(), {2}); }).find("reserved") !=
        std::string::npos);
  CHECK(error_of([&] {
          writer.add("v", x.data(), {-1, 2});
        }).find("invalid shape [-1, 2]") != std::string::npos);
  CHECK(error_of([&] { writer.add("\xff", x.data(), {2}); }).find("not valid UTF-8") !=
        std::string::npos);
  CHECK(error_of([&] { writer.set_metadata("k", "\xc3"); }).find("not valid UTF-8") !=
        std::string::npos);
  const std::string unwritable = tmp.file("no_such_dir/w.safetensors");
  CHECK(error_of([&] { writer.write(unwritable); }) ==
        unwritable + ": cannot open the file for writing");
  // The failed calls left the writer as it was: one tensor, no metadata.
  writer.write(tmp.file("w.safetensors"));
  SafetensorsReader reader(tmp.file("w.safetensors"));
  CHECK(reader.names() == std::vector<std::string>{"w"});
  CHECK(reader.metadata().empty());
}
