// Tests for the safetensors reader/writer and the half/bfloat16 conversions. Files are built
// byte by byte here (never through the writer) when the reader is under test, and conversions
// are checked against hand-computed bit patterns and an ldexp-based reference.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace {

using sieve::DType;
using nlohmann::json;

std::string base_dir() {
  return ::testing::TempDir() + "sieve_safetensors_" + std::to_string(::getpid());
}

// Removes this process's temp files when the test program ends.
class CleanupEnv : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(base_dir(), ec);
  }
};
const auto* const cleanup_env = ::testing::AddGlobalTestEnvironment(new CleanupEnv);

// A per-test directory under GoogleTest's temp dir.
std::string test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string base = base_dir();
  ::mkdir(base.c_str(), 0755);
  std::string dir = base + "/" + info->test_suite_name() + "." + info->name();
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}

// Raw little-endian bytes of a value, built by shifting (not by copying host memory).
std::string le_bytes(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

std::string make_file(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string bytes_of(const sieve::TensorView& v) {
  return std::string(reinterpret_cast<const char*>(v.data), v.nbytes);
}

// One hand-written header entry.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// Writes `bytes` to a file, opens it, and returns the sieve::Error message ("" if it opened).
std::string open_error(const std::string& bytes, std::string* path_out = nullptr) {
  static int n = 0;
  std::string path = test_dir() + "/case" + std::to_string(n++) + ".safetensors";
  if (path_out) *path_out = path;
  write_bytes(path, bytes);
  try {
    sieve::SafetensorsFile::open(path);
  } catch (const sieve::Error& e) {
    return e.what();
  }
  return "";
}

// Expects opening `bytes` to fail with a message naming the file and containing `needle`.
#define EXPECT_OPEN_ERROR(bytes, needle)                                              \
  do {                                                                                \
    std::string path_;                                                                \
    std::string msg_ = open_error(bytes, &path_);                                     \
    EXPECT_NE(msg_, "") << "expected an error containing: " << (needle);              \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "message: " << msg_;           \
    EXPECT_NE(msg_.find(path_), std::string::npos) << "message lacks path: " << msg_; \
  } while (0)

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Independent references: the value a half / bfloat16 pattern denotes, from its definition.
double half_ref(uint16_t h) {
  int sign = (h & 0x8000) ? -1 : 1;
  int e = (h >> 10) & 0x1F;
  int m = h & 0x3FF;
  if (e == 0x1F) return m ? std::numeric_limits<double>::quiet_NaN()
                          : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  return sign * std::ldexp(static_cast<double>(1024 + m), e - 25);
}

double bf16_ref(uint16_t h) {
  int sign = (h & 0x8000) ? -1 : 1;
  int e = (h >> 7) & 0xFF;
  int m = h & 0x7F;
  if (e == 0xFF) return m ? std::numeric_limits<double>::quiet_NaN()
                          : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -133);
  return sign * std::ldexp(static_cast<double>(128 + m), e - 134);
}

// ---------------------------------------------------------------------------------------------
// dtypes

TEST(SafetensorsDType, NamesSizesAndParsing) {
  struct Row {
    DType t;
    const char* name;
    size_t size;
  } rows[] = {{DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
              {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
              {DType::I16, "I16", 2}, {DType::I8, "I8", 1},   {DType::U8, "U8", 1},
              {DType::BOOL, "BOOL", 1}};
  for (const auto& r : rows) {
    EXPECT_EQ(sieve::dtype_size(r.t), r.size) << r.name;
    EXPECT_STREQ(sieve::dtype_name(r.t), r.name);
    EXPECT_EQ(sieve::dtype_from_name(r.name), r.t);
  }
  try {
    sieve::dtype_from_name("F8_E4M3");
    FAIL() << "expected an error";
  } catch (const sieve::Error& e) {
    EXPECT_NE(std::string(e.what()).find("F8_E4M3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sieve::dtype_from_name("f32"), sieve::Error);
}

// ---------------------------------------------------------------------------------------------
// half / bfloat16 conversions

TEST(SafetensorsHalf, KnownBitPatterns) {
  struct Pair {
    float f;
    uint16_t h;
  } exact[] = {
      {1.0f, 0x3C00},       {-2.0f, 0xC000},           {65504.0f, 0x7BFF},
      {0.5f, 0x3800},       {std::ldexp(1.0f, -24), 0x0001},  // smallest subnormal
      {std::ldexp(1.0f, -14), 0x0400},                          // smallest normal
      {std::ldexp(1023.0f, -24), 0x03FF},                       // largest subnormal
      {0.0f, 0x0000},       {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7C00},
      {-std::numeric_limits<float>::infinity(), 0xFC00},
      {0.333251953125f, 0x3555},
  };
  for (const auto& p : exact) {
    EXPECT_EQ(sieve::float_to_half(p.f), p.h) << p.f;
    EXPECT_EQ(float_bits(sieve::half_to_float(p.h)), float_bits(p.f)) << std::hex << p.h;
  }
  // Rounding cases, hand-computed.
  EXPECT_EQ(sieve::float_to_half(0.1f), 0x2E66);
  EXPECT_EQ(sieve::float_to_half(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(sieve::float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(sieve::float_to_half(65520.0f), 0x7C00);  // tie, 0x7BFF is odd -> up to inf
  EXPECT_EQ(sieve::float_to_half(-65520.0f), 0xFC00);
  EXPECT_EQ(sieve::float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(sieve::float_to_half(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(sieve::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even
  EXPECT_EQ(sieve::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even
  EXPECT_EQ(sieve::float_to_half(std::ldexp(1.0f, -25)), 0x0000);             // tie -> 0
  EXPECT_EQ(sieve::float_to_half(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(sieve::float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(sieve::float_to_half(3 * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 ulp tie -> 2
  EXPECT_EQ(sieve::float_to_half(std::ldexp(2047.0f, -25)), 0x0400);   // 1023.5 -> 1024 normal
  EXPECT_EQ(sieve::float_to_half(1e-8f), 0x0000);
  EXPECT_EQ(sieve::float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  // NaN stays NaN whatever its payload, including one that lives only in the low float bits.
  for (uint32_t nan_bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    uint16_t h = sieve::float_to_half(bits_float(nan_bits));
    EXPECT_EQ(h & 0x7C00, 0x7C00) << std::hex << nan_bits;
    EXPECT_NE(h & 0x03FF, 0) << std::hex << nan_bits;
    EXPECT_EQ(h & 0x8000, (nan_bits >> 16) & 0x8000);
  }
}

TEST(SafetensorsHalf, ExhaustiveDecodeAndRoundTrip) {
  for (uint32_t i = 0; i < 65536; ++i) {
    uint16_t h = static_cast<uint16_t>(i);
    float f = sieve::half_to_float(h);
    double ref = half_ref(h);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      uint16_t back = sieve::float_to_half(f);
      ASSERT_EQ(back & 0x7C00, 0x7C00) << std::hex << i;
      ASSERT_NE(back & 0x03FF, 0) << std::hex << i;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << std::hex << i;
    } else {
      ASSERT_EQ(static_cast<double>(f), ref) << std::hex << i;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << i;
      ASSERT_EQ(sieve::float_to_half(f), h) << std::hex << i;
    }
  }
}

// Every rounding boundary: the midpoint between two adjacent halves (exact in float) goes to
// the even one, and the floats just either side go to the nearer one.
TEST(SafetensorsHalf, ExhaustiveRoundingBoundaries) {
  for (uint32_t i = 0; i < 0x7BFF; ++i) {
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      uint16_t lo_h = static_cast<uint16_t>(i | sign), hi_h = static_cast<uint16_t>((i + 1) | sign);
      double mid_d = (half_ref(lo_h) + half_ref(hi_h)) / 2;
      float mid = static_cast<float>(mid_d);
      ASSERT_EQ(static_cast<double>(mid), mid_d);
      uint16_t even = (i & 1) ? hi_h : lo_h;
      ASSERT_EQ(sieve::float_to_half(mid), even) << std::hex << i;
      float away = sign ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      ASSERT_EQ(sieve::float_to_half(std::nextafter(mid, away)), hi_h) << std::hex << i;
      ASSERT_EQ(sieve::float_to_half(std::nextafter(mid, 0.0f)), lo_h) << std::hex << i;
    }
  }
}

TEST(SafetensorsBF16, KnownBitPatterns) {
  EXPECT_EQ(sieve::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(sieve::float_to_bf16(0.1f), 0x3DCD);  // 0x3DCCCCCD rounds up
  EXPECT_EQ(sieve::float_to_bf16(-5.0f), 0xC0A0);
  EXPECT_EQ(sieve::float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(sieve::float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(sieve::float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_EQ(sieve::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);       // tie -> even
  EXPECT_EQ(sieve::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);   // tie -> even
  EXPECT_EQ(sieve::float_to_bf16(bits_float(0x000116C2u)), 0x0001);           // subnormal
  EXPECT_EQ(sieve::bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(sieve::bf16_to_float(0xC0A0), -5.0f);
  EXPECT_EQ(sieve::bf16_to_float(0x0001), std::ldexp(1.0f, -133));
  for (uint32_t nan_bits : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu}) {
    uint16_t h = sieve::float_to_bf16(bits_float(nan_bits));
    EXPECT_TRUE(std::isnan(sieve::bf16_to_float(h))) << std::hex << nan_bits;
    EXPECT_EQ(h & 0x8000, (nan_bits >> 16) & 0x8000);
  }
}

TEST(SafetensorsBF16, ExhaustiveDecodeRoundTripAndBoundaries) {
  for (uint32_t i = 0; i < 65536; ++i) {
    uint16_t h = static_cast<uint16_t>(i);
    float f = sieve::bf16_to_float(h);
    double ref = bf16_ref(h);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_TRUE(std::isnan(sieve::bf16_to_float(sieve::float_to_bf16(f)))) << std::hex << i;
    } else {
      ASSERT_EQ(static_cast<double>(f), ref) << std::hex << i;
      ASSERT_EQ(sieve::float_to_bf16(f), h) << std::hex << i;
    }
  }
  for (uint32_t i = 0; i < 0x7F80; ++i) {
    uint16_t lo_h = static_cast<uint16_t>(i), hi_h = static_cast<uint16_t>(i + 1);
    // Past the largest finite value the "next" value is 2^128, which rounds like a finite one.
    double hi = (hi_h == 0x7F80) ? std::ldexp(1.0, 128) : bf16_ref(hi_h);
    double mid_d = (bf16_ref(lo_h) + hi) / 2;
    float mid = static_cast<float>(mid_d);
    ASSERT_EQ(static_cast<double>(mid), mid_d) << std::hex << i;
    ASSERT_EQ(sieve::float_to_bf16(mid), (i & 1) ? hi_h : lo_h) << std::hex << i;
    float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    ASSERT_EQ(sieve::float_to_bf16(above), hi_h) << std::hex << i;
    ASSERT_EQ(sieve::float_to_bf16(std::nextafter(mid, 0.0f)), lo_h) << std::hex << i;
  }
}

// ---------------------------------------------------------------------------------------------
// reading hand-built files

TEST(SafetensorsRead, HandBuiltFile) {
  // a: F32 [2,2] = 1, 2, -3.5, 0.5; b: I8 [3] = 1, -2, 127. Keys deliberately unsorted and the
  // header length chosen so that the data section is not even 2-byte aligned.
  std::string header = "{" + entry("b", "I8", "[3]", 16, 19) +
                       ",\"__metadata__\":{\"format\":\"pt\"}," + entry("a", "F32", "[2, 2]", 0, 16) +
                       "}";
  while ((8 + header.size()) % 8 != 1) header += ' ';
  std::string data = le_bytes(0x3F800000, 4) + le_bytes(0x40000000, 4) + le_bytes(0xC0600000, 4) +
                     le_bytes(0x3F000000, 4) + std::string("\x01\xFE\x7F", 3);
  std::string path = test_dir() + "/hand.safetensors";
  write_bytes(path, make_file(header, data));

  auto st = sieve::SafetensorsFile::open(path);
  EXPECT_EQ(st->path(), path);
  EXPECT_EQ(st->names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(st->contains("a"));
  EXPECT_FALSE(st->contains("c"));
  EXPECT_FALSE(st->contains("__metadata__"));
  EXPECT_EQ(st->metadata(), (std::map<std::string, std::string>{{"format", "pt"}}));

  const auto& a = st->get("a");
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a.numel(), 4);
  EXPECT_EQ(a.nbytes, 16u);
  EXPECT_EQ(bytes_of(a), data.substr(0, 16));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 2, 1u);  // really unaligned
  EXPECT_EQ(a.to_float(), (std::vector<float>{1.0f, 2.0f, -3.5f, 0.5f}));

  const auto& b = st->get("b");
  EXPECT_EQ(b.dtype, DType::I8);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(bytes_of(b), data.substr(16, 3));
  EXPECT_EQ(b.to_float(), (std::vector<float>{1.0f, -2.0f, 127.0f}));
}

TEST(SafetensorsRead, EveryDTypeToFloatFromHandBytes) {
  struct Case {
    std::string name, dtype, shape, bytes;
    std::vector<float> expected;
  };
  std::vector<Case> cases = {
      {"f64", "F64", "[2]", le_bytes(0x3FF8000000000000ull, 8) + le_bytes(0xC024000000000000ull, 8),
       {1.5f, -10.0f}},
      {"f32", "F32", "[1]", le_bytes(0xBE800000, 4), {-0.25f}},
      {"f16", "F16", "[4]",
       le_bytes(0x3C00, 2) + le_bytes(0xC000, 2) + le_bytes(0x7BFF, 2) + le_bytes(0x0001, 2),
       {1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24)}},
      {"bf16", "BF16", "[2]", le_bytes(0x3F80, 2) + le_bytes(0xC0A0, 2), {1.0f, -5.0f}},
      {"i64", "I64", "[2]", le_bytes(static_cast<uint64_t>(-7), 8) + le_bytes(1ull << 40, 8),
       {-7.0f, 1099511627776.0f}},
      {"i32", "I32", "[1]", le_bytes(static_cast<uint32_t>(-100000), 4), {-100000.0f}},
      {"i16", "I16", "[1]", le_bytes(0xFED4, 2), {-300.0f}},
      {"i8", "I8", "[1]", std::string("\x80", 1), {-128.0f}},
      {"u8", "U8", "[2]", std::string("\xC8\x00", 2), {200.0f, 0.0f}},
      {"z_bool", "BOOL", "[3]", std::string("\x00\x01\x01", 3), {0.0f, 1.0f, 1.0f}},
  };
  // Each case is read twice: at an aligned offset and after one padding byte tensor.
  for (int shift : {0, 1}) {
    std::string header = "{", data;
    if (shift) {
      header += entry("0pad", "U8", "[1]", 0, 1) + ",";
      data += "x";
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      header += entry(cases[i].name, cases[i].dtype, cases[i].shape, data.size(),
                      data.size() + cases[i].bytes.size());
      header += i + 1 < cases.size() ? "," : "}";
      data += cases[i].bytes;
    }
    while (header.size() % 8) header += ' ';
    std::string path = test_dir() + "/dtypes" + std::to_string(shift) + ".safetensors";
    write_bytes(path, make_file(header, data));
    auto st = sieve::SafetensorsFile::open(path);
    for (const auto& c : cases) {
      const auto& v = st->get(c.name);
      EXPECT_STREQ(sieve::dtype_name(v.dtype), c.dtype.c_str());
      EXPECT_EQ(bytes_of(v), c.bytes) << c.name;
      EXPECT_EQ(v.to_float(), c.expected) << c.name << " shift " << shift;
    }
  }
}

TEST(SafetensorsRead, ScalarsEmptyTensorsAndEmptyFile) {
  // A scalar (shape []), two zero-element tensors sharing an offset, extra fields ignored.
  std::string header = "{\"e1\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
                       "\"e2\":{\"dtype\":\"I64\",\"shape\":[5,0],\"data_offsets\":[4,4],\"extra\":[1]},"
                       "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4],\"note\":\"x\"},"
                       "\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[4,5]}}";
  std::string path = test_dir() + "/scalar.safetensors";
  write_bytes(path, make_file(header, le_bytes(0x40490FDB, 4) + "z"));
  auto st = sieve::SafetensorsFile::open(path);
  EXPECT_EQ(st->get("s").numel(), 1);
  EXPECT_TRUE(st->get("s").shape.empty());
  EXPECT_EQ(st->get("s").to_float(), (std::vector<float>{bits_float(0x40490FDB)}));
  EXPECT_EQ(st->get("e1").numel(), 0);
  EXPECT_EQ(st->get("e1").nbytes, 0u);
  EXPECT_TRUE(st->get("e2").to_float().empty());
  EXPECT_EQ(st->get("t").to_float(), (std::vector<float>{static_cast<float>('z')}));
  EXPECT_TRUE(st->metadata().empty());

  // No tensors at all: "{}" and nothing after it.
  std::string path2 = test_dir() + "/empty.safetensors";
  write_bytes(path2, make_file("{}      ", ""));
  auto st2 = sieve::SafetensorsFile::open(path2);
  EXPECT_TRUE(st2->names().empty());
}

TEST(SafetensorsRead, MissingFileAndUnknownTensor) {
  std::string missing = test_dir() + "/does_not_exist.safetensors";
  try {
    sieve::SafetensorsFile::open(missing);
    FAIL() << "expected an error";
  } catch (const sieve::Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(sieve::SafetensorsFile::open(test_dir()), sieve::Error);  // a directory

  std::string path = test_dir() + "/one.safetensors";
  write_bytes(path, make_file("{" + entry("a", "U8", "[1]", 0, 1) + "}", "q"));
  auto st = sieve::SafetensorsFile::open(path);
  try {
    st->get("encoder.layer.0.weight");
    FAIL() << "expected an error";
  } catch (const sieve::Error& e) {
    EXPECT_NE(std::string(e.what()).find("encoder.layer.0.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// malformed files

std::string one(const std::string& body) { return "{" + body + "}"; }

TEST(SafetensorsMalformed, LengthField) {
  EXPECT_OPEN_ERROR("", "shorter than the 8-byte");
  EXPECT_OPEN_ERROR("abc", "shorter than the 8-byte");
  EXPECT_OPEN_ERROR(std::string(7, '\0'), "shorter than the 8-byte");
  EXPECT_OPEN_ERROR(le64(0), "header length is 0");
  EXPECT_OPEN_ERROR(le64(0) + "{}", "header length is 0");
  EXPECT_OPEN_ERROR(le64(1000) + "{}", "larger than");
  EXPECT_OPEN_ERROR(le64(3) + "{}", "larger than");
  EXPECT_OPEN_ERROR(le64(100'000'001) + "{}", "exceeds");
  EXPECT_OPEN_ERROR(le64(std::numeric_limits<uint64_t>::max()) + "{}", "exceeds");
}

TEST(SafetensorsMalformed, HeaderJson) {
  EXPECT_OPEN_ERROR(make_file("{not json", ""), "not valid JSON");
  EXPECT_OPEN_ERROR(make_file("{}x", ""), "not valid JSON");
  EXPECT_OPEN_ERROR(make_file(std::string("{}\0\0", 4), ""), "NUL byte at offset 2");
  EXPECT_OPEN_ERROR(make_file(std::string("{\"a\0\":1}", 8), ""), "not valid JSON");
  EXPECT_OPEN_ERROR(make_file("{\"a\xFF\":1}", ""), "not valid JSON");  // ill-formed UTF-8
  EXPECT_OPEN_ERROR(make_file("        ", ""), "not valid JSON");
  EXPECT_OPEN_ERROR(make_file("[1,2]", ""), "not an object");
  EXPECT_OPEN_ERROR(make_file("\"str\"", ""), "not an object");
  EXPECT_OPEN_ERROR(make_file("null", ""), "not an object");
  // Deep nesting must not overflow the stack.
  EXPECT_OPEN_ERROR(make_file(std::string(200000, '[') + std::string(200000, ']'), ""), "not an object");
}

TEST(SafetensorsMalformed, DuplicateKeys) {
  std::string a = entry("a", "U8", "[1]", 0, 1);
  EXPECT_OPEN_ERROR(make_file(one(a + "," + a), "q"), "duplicate key 'a'");
  EXPECT_OPEN_ERROR(
      make_file(one("\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}"), "q"),
      "duplicate key 'dtype'");
  EXPECT_OPEN_ERROR(make_file(one("\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}"), ""), "duplicate key 'k'");
  // The same key in different objects is fine.
  EXPECT_EQ(open_error(make_file(one("\"__metadata__\":{\"dtype\":\"x\"}," + a), "q")), "");
}

TEST(SafetensorsMalformed, TensorEntries) {
  EXPECT_OPEN_ERROR(make_file(one("\"a\":5"), ""), "tensor 'a': entry is a JSON number, not an object");
  EXPECT_OPEN_ERROR(make_file(one("\"a\":[]"), ""), "not an object");
  EXPECT_OPEN_ERROR(make_file(one("\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}"), "q"),
                    "missing field \"dtype\"");
  EXPECT_OPEN_ERROR(make_file(one("\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}"), "q"),
                    "missing field \"shape\"");
  EXPECT_OPEN_ERROR(make_file(one("\"a\":{\"dtype\":\"U8\",\"shape\":[1]}"), "q"),
                    "missing field \"data_offsets\"");
  // dtype
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F8_E4M3", "[1]", 0, 1)), "q"), "unknown dtype 'F8_E4M3'");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "f32", "[1]", 0, 4)), "qqqq"), "unknown dtype 'f32'");
  EXPECT_OPEN_ERROR(make_file(one("\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,1]}"), "q"),
                    "dtype is a JSON number");
  // shape
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "3", 0, 3)), "qqq"), "shape is a JSON number");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "{}", 0, 3)), "qqq"), "shape is a JSON object");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[1,-3]", 0, 3)), "qqq"),
                    "shape[1] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[2.5]", 0, 3)), "qqq"),
                    "shape[0] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[3.0]", 0, 3)), "qqq"),
                    "shape[0] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[\"3\"]", 0, 3)), "qqq"),
                    "shape[0] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[null]", 0, 3)), "qqq"),
                    "shape[0] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[[3]]", 0, 3)), "qqq"),
                    "shape[0] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[9223372036854775808]", 0, 3)), "qqq"),
                    "shape[0] is not a non-negative integer");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[1e400]", 0, 3)), "qqq"), "");  // any Error
  // element count and byte size overflow
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[4294967296,4294967296]", 0, 0)), ""),
                    "element count of the shape overflows");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "U8", "[3037000500,3037000500]", 0, 0)), ""),
                    "element count of the shape overflows");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F64", "[4611686018427387904]", 0, 0)), ""),
                    "byte size");
  // A zero dimension makes any other dimension harmless.
  EXPECT_EQ(open_error(make_file(one(entry("a", "F64", "[0,9223372036854775807]", 0, 0)), "")), "");
}

TEST(SafetensorsMalformed, DataOffsets) {
  auto with_offsets = [](const std::string& offsets) {
    return make_file(one("\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":" + offsets + "}"), "qq");
  };
  const std::string two = "data_offsets must be two non-negative integers";
  EXPECT_OPEN_ERROR(with_offsets("2"), two);
  EXPECT_OPEN_ERROR(with_offsets("[0]"), two);
  EXPECT_OPEN_ERROR(with_offsets("[0,1,2]"), two);
  EXPECT_OPEN_ERROR(with_offsets("[-1,1]"), two);
  EXPECT_OPEN_ERROR(with_offsets("[0,2.0]"), two);
  EXPECT_OPEN_ERROR(with_offsets("[\"0\",2]"), two);
  EXPECT_OPEN_ERROR(with_offsets("{\"0\":2}"), two);
  EXPECT_OPEN_ERROR(with_offsets("[0,18446744073709551616]"), two);
  EXPECT_OPEN_ERROR(with_offsets("[2,0]"), "begin 2 is after end 0");
  EXPECT_OPEN_ERROR(with_offsets("[0,3]"), "span 3 bytes but shape and dtype U8 need 2");
  EXPECT_OPEN_ERROR(with_offsets("[0,1]"), "span 1 bytes");
  EXPECT_OPEN_ERROR(with_offsets("[1,3]"), "beyond the data section of 2 bytes");
  EXPECT_OPEN_ERROR(with_offsets("[18446744073709551613,18446744073709551615]"), "beyond the data section");
  EXPECT_EQ(open_error(with_offsets("[0,2]")), "");
}

TEST(SafetensorsMalformed, OverlapsAndHoles) {
  const std::string d12(12, 'x');
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12)), d12),
                    "tensor 'b' (bytes [4, 12)) overlaps tensor 'a'");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 0, 8)), d12),
                    "overlaps");
  // A zero-size tensor inside another one's bytes is rejected too (Hugging Face does the same).
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[0]", 4, 4)), "12345678"),
                    "overlaps");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12)), d12),
                    "hole in the data section: bytes [4, 8) before tensor 'b'");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F32", "[1]", 4, 8)), "12345678"), "bytes [0, 4) before tensor 'a'");
  EXPECT_OPEN_ERROR(make_file(one(entry("a", "F32", "[1]", 0, 4)), "12345678"), "trailing bytes [4, 8)");
  EXPECT_OPEN_ERROR(make_file("{}", "1"), "trailing bytes [0, 1)");
  EXPECT_OPEN_ERROR(make_file(one("\"__metadata__\":{}"), "1"), "trailing bytes [0, 1)");
  // Exactly tiled, in any key order: fine.
  EXPECT_EQ(open_error(make_file(one(entry("b", "F32", "[1]", 0, 4) + "," + entry("a", "F32", "[2]", 4, 12)), d12)),
            "");
}

TEST(SafetensorsMalformed, Metadata) {
  EXPECT_OPEN_ERROR(make_file(one("\"__metadata__\":[1]"), ""), "__metadata__ is a JSON array");
  EXPECT_OPEN_ERROR(make_file(one("\"__metadata__\":\"pt\""), ""), "__metadata__ is a JSON string");
  // A null metadata map is accepted, as Hugging Face's safetensors does.
  const std::string a = entry("a", "U8", "[1]", 0, 1);
  const auto null_meta = test_dir() + "/null_meta.safetensors";
  write_bytes(null_meta, make_file(one("\"__metadata__\":null," + a), "q"));
  EXPECT_TRUE(sieve::SafetensorsFile::open(null_meta)->metadata().empty());
  EXPECT_TRUE(sieve::SafetensorsFile::open(null_meta)->contains("a"));
  EXPECT_OPEN_ERROR(make_file(one("\"__metadata__\":{\"format\":\"pt\",\"n\":1}"), ""),
                    "__metadata__ value of 'n' is a JSON number");
  EXPECT_OPEN_ERROR(make_file(one("\"__metadata__\":{\"o\":{}}"), ""), "__metadata__ value of 'o' is a JSON object");
}

// Every strict prefix of a valid file is an error (never a crash); the whole file reads back.
TEST(SafetensorsMalformed, EveryTruncationIsAnError) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}," + entry("a", "F16", "[3]", 0, 6) + "," +
                       entry("b", "I32", "[2]", 6, 14) + "}";
  while (header.size() % 8) header += ' ';
  std::string data = le_bytes(0x3C00, 2) + le_bytes(0xC000, 2) + le_bytes(0x7BFF, 2) +
                     le_bytes(7, 4) + le_bytes(static_cast<uint32_t>(-9), 4);
  std::string full = make_file(header, data);
  std::string path = test_dir() + "/trunc.safetensors";
  for (size_t len = 0; len <= full.size(); ++len) {
    write_bytes(path, full.substr(0, len));
    if (len < full.size()) {
      EXPECT_THROW(sieve::SafetensorsFile::open(path), sieve::Error) << "prefix length " << len;
    } else {
      auto st = sieve::SafetensorsFile::open(path);
      EXPECT_EQ(st->get("a").to_float(), (std::vector<float>{1.0f, -2.0f, 65504.0f}));
      EXPECT_EQ(st->get("b").to_float(), (std::vector<float>{7.0f, -9.0f}));
      EXPECT_EQ(st->metadata().at("format"), "pt");
    }
  }
}

// Corrupting any single byte gives either a valid file or sieve::Error, never anything else.
TEST(SafetensorsMalformed, SingleByteCorruptionNeverCrashes) {
  std::string header = one(entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "U8", "[3]", 8, 11));
  std::string full = make_file(header, std::string(11, '\x01'));
  std::string path = test_dir() + "/corrupt.safetensors";
  const char replacements[] = {'\0', '\xFF', '"', '}', ']', '[', '{', '0', '9', '-', ',', ':', ' ', 'e'};
  for (size_t pos = 0; pos < full.size(); ++pos) {
    for (char r : replacements) {
      std::string bytes = full;
      bytes[pos] = r;
      write_bytes(path, bytes);
      try {
        auto st = sieve::SafetensorsFile::open(path);
        for (const auto& n : st->names()) {
          const auto& v = st->get(n);
          ASSERT_EQ(v.to_float().size(), static_cast<size_t>(v.numel()));
        }
      } catch (const sieve::Error&) {
      } catch (const std::exception& e) {
        FAIL() << "pos " << pos << " byte " << int(r) << ": unexpected exception " << e.what();
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// writer

struct Owned {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::vector<Owned> random_tensors() {
  std::mt19937 rng(1234);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
    return s;
  };
  std::vector<Owned> ts;
  const DType all[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                       DType::I32, DType::I16, DType::I8,  DType::U8,   DType::BOOL};
  const std::vector<std::vector<int64_t>> shapes = {{3}, {2, 3}, {}, {1, 2, 3}, {5}};
  int k = 0;
  for (DType t : all) {
    const auto& shape = shapes[k % shapes.size()];
    int64_t n = 1;
    for (auto d : shape) n *= d;
    // Names in reverse order of writing, to check that the writer sorts.
    ts.push_back({"t" + std::to_string(20 - k) + "." + sieve::dtype_name(t), t, shape,
                  random_bytes(static_cast<size_t>(n) * sieve::dtype_size(t))});
    ++k;
  }
  ts.push_back({"zero", DType::F32, {0, 4}, ""});
  return ts;
}

std::vector<sieve::TensorToWrite> to_write(const std::vector<Owned>& ts) {
  std::vector<sieve::TensorToWrite> out;
  for (const auto& t : ts) out.push_back({t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size()});
  return out;
}

TEST(SafetensorsWrite, RoundTripEveryDTypeExactBytes) {
  auto ts = random_tensors();
  std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"empty", ""}, {"unicode", "h\xC3\xA9llo \xE2\x9C\x93"}, {"quote\"key", "a\nb\\c"}};
  std::string path = test_dir() + "/rt.safetensors";
  sieve::write_safetensors(path, to_write(ts), meta);
  auto st = sieve::SafetensorsFile::open(path);
  EXPECT_EQ(st->metadata(), meta);
  std::vector<std::string> names;
  for (const auto& t : ts) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(st->names(), names);
  for (const auto& t : ts) {
    const auto& v = st->get(t.name);
    EXPECT_EQ(v.dtype, t.dtype) << t.name;
    EXPECT_EQ(v.shape, t.shape) << t.name;
    EXPECT_EQ(bytes_of(v), t.bytes) << t.name;
  }
  // The data section is exactly the tensors' bytes in sorted-name order.
  std::string file = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(file[i]);
  std::map<std::string, std::string> sorted;
  for (const auto& t : ts) sorted[t.name] = t.bytes;
  std::string expected_data;
  for (const auto& kv : sorted) expected_data += kv.second;
  EXPECT_EQ(file.substr(8 + n), expected_data);
}

TEST(SafetensorsWrite, HeaderIsAlignedWithCorrectOffsets) {
  auto ts = random_tensors();
  std::string path = test_dir() + "/hdr.safetensors";
  sieve::write_safetensors(path, to_write(ts), {{"format", "pt"}});
  std::string file = read_bytes(path);
  ASSERT_GE(file.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(file[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  ASSERT_LE(8 + n, file.size());
  std::string text = file.substr(8, n);
  size_t close = text.find_last_not_of(' ');
  ASSERT_NE(close, std::string::npos);
  EXPECT_EQ(text[close], '}');
  EXPECT_LT(n - (close + 1), 8u) << "padding is more than needed";
  json h = json::parse(text);
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h["__metadata__"], json({{"format", "pt"}}));

  std::map<std::string, const Owned*> sorted;
  for (const auto& t : ts) sorted[t.name] = &t;
  EXPECT_EQ(h.size(), sorted.size() + 1);
  uint64_t offset = 0;
  for (const auto& kv : sorted) {
    const Owned& t = *kv.second;
    ASSERT_TRUE(h.contains(t.name)) << t.name;
    const json& e = h[t.name];
    EXPECT_EQ(e["dtype"], sieve::dtype_name(t.dtype));
    EXPECT_EQ(e["shape"].get<std::vector<int64_t>>(), t.shape);
    EXPECT_EQ(e["data_offsets"], json::array({offset, offset + t.bytes.size()})) << t.name;
    offset += t.bytes.size();
  }
  EXPECT_EQ(8 + n + offset, file.size());
}

TEST(SafetensorsWrite, EmptyAndOverwrite) {
  std::string path = test_dir() + "/empty.safetensors";
  sieve::write_safetensors(path, {});
  EXPECT_EQ(read_bytes(path), le64(8) + "{}      ");
  EXPECT_TRUE(sieve::SafetensorsFile::open(path)->names().empty());
  uint8_t b = 42;
  sieve::write_safetensors(path, {{"x", DType::U8, {1}, &b, 1}});
  auto st = sieve::SafetensorsFile::open(path);
  EXPECT_EQ(st->names(), std::vector<std::string>{"x"});
  EXPECT_EQ(st->get("x").to_float(), std::vector<float>{42.0f});
}

TEST(SafetensorsWrite, RejectsBadInput) {
  std::string dir = test_dir();
  std::string path = dir + "/bad.safetensors";
  float f[2] = {1, 2};
  auto expect_write_error = [&](const std::vector<sieve::TensorToWrite>& ts, const std::string& needle) {
    try {
      sieve::write_safetensors(path, ts);
      ADD_FAILURE() << "expected an error containing " << needle;
    } catch (const sieve::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_write_error({{"a", DType::F32, {2}, f, 4}}, "nbytes 4 but 2 elements of F32 need 8");
  expect_write_error({{"a", DType::F32, {-2}, f, 8}}, "negative dimension");
  expect_write_error({{"a", DType::F32, {2}, f, 8}, {"a", DType::F32, {2}, f, 8}}, "duplicate tensor name 'a'");
  expect_write_error({{"__metadata__", DType::F32, {2}, f, 8}}, "__metadata__");
  expect_write_error({{"a", DType::F32, {2}, nullptr, 8}}, "no data");
  expect_write_error({{"a\xFF", DType::F32, {2}, f, 8}}, "UTF-8");
  EXPECT_FALSE(std::ifstream(path).good()) << "nothing may be written on error";
  EXPECT_THROW(sieve::write_safetensors(dir + "/no_such_dir/x.safetensors", {{"a", DType::F32, {2}, f, 8}}),
               sieve::Error);
}

TEST(SafetensorsView, ToFloatUnalignedAndInconsistent) {
  // Values placed at odd addresses inside a byte buffer.
  alignas(8) uint8_t buf[64] = {};
  double d[2] = {0.25, -1e300};
  std::memcpy(buf + 1, d, sizeof d);
  sieve::TensorView v;
  v.name = "d";
  v.dtype = DType::F64;
  v.shape = {2};
  v.data = buf + 1;
  v.nbytes = 16;
  auto out = v.to_float();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], 0.25f);
  EXPECT_TRUE(std::isinf(out[1]) && out[1] < 0);

  float fl[3] = {1.5f, -2.25f, 3e-40f};
  std::memcpy(buf + 3, fl, sizeof fl);
  v.dtype = DType::F32;
  v.shape = {3};
  v.data = buf + 3;
  v.nbytes = 12;
  EXPECT_EQ(v.to_float(), (std::vector<float>{1.5f, -2.25f, 3e-40f}));

  v.nbytes = 11;
  EXPECT_THROW(v.to_float(), sieve::Error);
  v.nbytes = 12;
  v.shape = {-3};
  EXPECT_THROW(v.to_float(), sieve::Error);
}

}  // namespace
