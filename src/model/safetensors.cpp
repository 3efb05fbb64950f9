// safetensors reader and writer. The reader maps the file and validates the whole header up front
// (so that every TensorView it hands out points inside the mapping and has a consistent size);
// the writer streams the caller's buffers into a temp file that is renamed into place.
#include "sieve/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/mmap_file.h"
#include "sieve/error.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "sieve's safetensors I/O assumes a little-endian host (the format's byte order)"
#endif

namespace sieve {

namespace {

using json = nlohmann::json;

// Hugging Face's own limit; a larger header is a corrupt length field, not a real model.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},   {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};

const DTypeInfo& dtype_info(DType t) {
  for (const auto& info : kDTypes)
    if (info.type == t) return info;
  SIEVE_ASSERT_MSG(false, "unknown DType value " << static_cast<int>(t));
  return kDTypes[0];  // unreachable
}

bool lookup_dtype(const std::string& name, DType* out) {
  for (const auto& info : kDTypes) {
    if (name == info.name) {
      *out = info.type;
      return true;
    }
  }
  return false;
}

// Product of `shape`, or false when a dimension is negative or the product leaves int64.
bool checked_numel(const std::vector<int64_t>& shape, int64_t* out) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

// numel * dtype size in bytes, or false when it does not fit in size_t.
bool checked_nbytes(int64_t numel, DType t, size_t* out) {
  size_t es = dtype_size(t);
  if (static_cast<uint64_t>(numel) > std::numeric_limits<size_t>::max() / es) return false;
  *out = static_cast<size_t>(numel) * es;
  return true;
}

std::string list_dtypes() {
  std::string s;
  for (const auto& info : kDTypes) {
    if (!s.empty()) s += ' ';
    s += info.name;
  }
  return s;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // tensor data inside a mapping need not be aligned
  return v;
}

// Parses the header JSON, noting the first key that occurs twice in one object (nlohmann alone
// would silently keep the last one, and a duplicated tensor name is a corrupt or hostile file).
json parse_header(const std::string& path, const char* begin, const char* end) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() && duplicate.empty() &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second)
          duplicate = parsed.get_ref<const std::string&>();
        break;
      default:
        break;
    }
    return true;
  };
  // nlohmann's lexer takes a NUL byte as the end of input, which would accept "{}\0<garbage>".
  const void* nul = std::memchr(begin, '\0', static_cast<size_t>(end - begin));
  SIEVE_THROW_IF_NOT(nul == nullptr, "safetensors file '" << path
                                                        << "': header is not valid JSON: NUL byte at offset "
                                                        << (static_cast<const char*>(nul) - begin));
  json header;
  try {
    header = json::parse(begin, end, cb);
  } catch (const json::exception& e) {
    SIEVE_THROW("safetensors file '" << path << "': header is not valid JSON: " << e.what());
  }
  SIEVE_THROW_IF_NOT(duplicate.empty(), "safetensors file '" << path << "': header has duplicate key '"
                                                             << duplicate << "'");
  return header;
}

// A JSON value as a non-negative integer that fits in `max`, or false.
bool as_uint(const json& v, uint64_t max, uint64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > max) return false;
    *out = u;
    return true;
  }
  if (v.is_number_integer()) {  // nlohmann stores non-negative literals as unsigned; be safe anyway
    int64_t i = v.get<int64_t>();
    if (i < 0 || static_cast<uint64_t>(i) > max) return false;
    *out = static_cast<uint64_t>(i);
    return true;
  }
  return false;
}

struct Range {
  uint64_t begin;
  uint64_t end;
  const std::string* name;
};

void write_all(int fd, const void* data, size_t n, const std::string& tmp) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    // Cap each call: Linux writes at most ~2 GiB per write() anyway.
    ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      SIEVE_THROW("cannot write '" << tmp << "': " << std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

size_t dtype_size(DType t) { return dtype_info(t).size; }

const char* dtype_name(DType t) { return dtype_info(t).name; }

DType dtype_from_name(const std::string& name) {
  DType t;
  SIEVE_THROW_IF_NOT(lookup_dtype(name, &t),
                     "unknown safetensors dtype '" << name << "' (supported: " << list_dtypes() << ")");
  return t;
}

// ---------------------------------------------------------------------------------------------
// half / bfloat16

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf, or NaN with its payload kept
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalise so the leading 1 becomes the implicit bit of a normal float.
    int e = 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e + 112) << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {
    if (ax == 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u);
    // NaN: keep the top payload bits (so half->float->half is exact); never let it become inf.
    uint32_t m = (ax >> 13) & 0x3FFu;
    if (m == 0) m = 0x200u;
    return static_cast<uint16_t>(sign | 0x7C00u | m);
  }
  // 65520 is halfway between 65504 (0x7BFF, odd mantissa) and 65536: ties-to-even goes to inf.
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
  if (ax >= 0x38800000u) {  // normal half range, |f| >= 2^-14
    uint32_t exp = (ax >> 23) - 127 + 15;
    uint32_t mant = ax & 0x7FFFFFu;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into exp is correct
    return static_cast<uint16_t>(sign | h);
  }
  // |f| <= 2^-25 (the halfway point to the smallest subnormal, which ties to even 0) -> zero.
  if (ax <= 0x33000000u) return static_cast<uint16_t>(sign);
  // Subnormal half: value = m * 2^-24; the float is (mant | 1<<23) * 2^(E-150).
  uint32_t e = ax >> 23;  // 102 < e < 113 here
  uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126 - e;  // 14..24
  uint32_t h = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (h & 1u))) ++h;  // 0x3FF may round up to 0x400 = 2^-14
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: truncate, but keep it a NaN
    uint32_t h = x >> 16;
    if ((h & 0x7Fu) == 0) h |= 0x40u;
    return static_cast<uint16_t>(h);
  }
  // Round to nearest even; overflow past the largest finite value carries into inf correctly.
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// ---------------------------------------------------------------------------------------------
// TensorView

int64_t TensorView::numel() const {
  int64_t n;
  SIEVE_THROW_IF_NOT(checked_numel(shape, &n),
                     "tensor '" << name << "': shape has a negative dimension or too many elements");
  return n;
}

std::vector<float> TensorView::to_float() const {
  int64_t n = numel();
  size_t expected;
  SIEVE_THROW_IF_NOT(checked_nbytes(n, dtype, &expected) && expected == nbytes,
                     "tensor '" << name << "': " << nbytes << " bytes do not match shape and dtype "
                                << dtype_name(dtype));
  SIEVE_THROW_IF_NOT(n == 0 || data != nullptr, "tensor '" << name << "' has no data");
  std::vector<float> out(static_cast<size_t>(n));
  const uint8_t* p = data;
  const size_t count = out.size();
  switch (dtype) {
    case DType::F64:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
      break;
    case DType::F32:
      if (count > 0) std::memcpy(out.data(), p, count * sizeof(float));
      break;
    case DType::F16:
      for (size_t i = 0; i < count; ++i) out[i] = half_to_float(load<uint16_t>(p + 2 * i));
      break;
    case DType::BF16:
      for (size_t i = 0; i < count; ++i) out[i] = bf16_to_float(load<uint16_t>(p + 2 * i));
      break;
    case DType::I64:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<int64_t>(p + 8 * i));
      break;
    case DType::I32:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<int32_t>(p + 4 * i));
      break;
    case DType::I16:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<int16_t>(p + 2 * i));
      break;
    case DType::I8:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(static_cast<int8_t>(p[i]));
      break;
    case DType::U8:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(p[i]);
      break;
    case DType::BOOL:
      for (size_t i = 0; i < count; ++i) out[i] = p[i] != 0 ? 1.0f : 0.0f;
      break;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

struct SafetensorsFile::Mapping {
  MappedFile file;
};

SafetensorsFile::~SafetensorsFile() = default;

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> st(new SafetensorsFile());
  st->path_ = path;
  st->map_ = std::make_unique<Mapping>();
  st->map_->file = MappedFile(path);  // throws naming the path when missing or unreadable
  const uint8_t* base = st->map_->file.data();
  const size_t size = st->map_->file.size();

#define SIEVE_ST_CHECK(cond, ...) \
  SIEVE_THROW_IF_NOT(cond, "safetensors file '" << path << "': " << __VA_ARGS__)

  SIEVE_ST_CHECK(size >= 8, "file is " << size << " bytes, shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];
  SIEVE_ST_CHECK(header_len > 0, "header length is 0");
  SIEVE_ST_CHECK(header_len <= kMaxHeaderBytes,
                 "header length " << header_len << " exceeds the " << kMaxHeaderBytes
                                  << "-byte limit (corrupt length field?)");
  SIEVE_ST_CHECK(header_len <= size - 8, "header length " << header_len << " is larger than the "
                                                          << size - 8
                                                          << " bytes that follow it (truncated file?)");
  const char* hbegin = reinterpret_cast<const char*>(base + 8);
  json header = parse_header(path, hbegin, hbegin + header_len);
  SIEVE_ST_CHECK(header.is_object(), "header is a JSON " << header.type_name() << ", not an object");

  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<Range> ranges;
  ranges.reserve(header.size());

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& entry = it.value();
    if (name == "__metadata__") {
      if (entry.is_null()) continue;  // Hugging Face's safetensors accepts a null metadata map
      SIEVE_ST_CHECK(entry.is_object(), "__metadata__ is a JSON " << entry.type_name()
                                                                  << ", not an object of strings");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        SIEVE_ST_CHECK(m.value().is_string(), "__metadata__ value of '" << m.key() << "' is a JSON "
                                                                        << m.value().type_name()
                                                                        << ", not a string");
        st->metadata_.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
#define SIEVE_ST_TCHECK(cond, ...) SIEVE_ST_CHECK(cond, "tensor '" << name << "': " << __VA_ARGS__)
    SIEVE_ST_TCHECK(entry.is_object(), "entry is a JSON " << entry.type_name() << ", not an object");
    for (const char* field : {"dtype", "shape", "data_offsets"})
      SIEVE_ST_TCHECK(entry.contains(field), "missing field \"" << field << "\"");

    TensorView view;
    view.name = name;
    const json& jd = entry.at("dtype");
    SIEVE_ST_TCHECK(jd.is_string(), "dtype is a JSON " << jd.type_name() << ", not a string");
    SIEVE_ST_TCHECK(lookup_dtype(jd.get<std::string>(), &view.dtype),
                    "unknown dtype '" << jd.get<std::string>() << "' (supported: " << list_dtypes()
                                      << ")");

    const json& js = entry.at("shape");
    SIEVE_ST_TCHECK(js.is_array(), "shape is a JSON " << js.type_name() << ", not an array");
    for (size_t i = 0; i < js.size(); ++i) {
      uint64_t d;
      SIEVE_ST_TCHECK(as_uint(js[i], static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), &d),
                      "shape[" << i << "] is not a non-negative integer");
      view.shape.push_back(static_cast<int64_t>(d));
    }
    int64_t numel;
    SIEVE_ST_TCHECK(checked_numel(view.shape, &numel), "element count of the shape overflows");
    size_t nbytes;
    SIEVE_ST_TCHECK(checked_nbytes(numel, view.dtype, &nbytes),
                    "byte size of " << numel << " elements overflows");

    const json& jo = entry.at("data_offsets");
    uint64_t begin = 0, end = 0;
    SIEVE_ST_TCHECK(jo.is_array() && jo.size() == 2 &&
                        as_uint(jo[0], std::numeric_limits<uint64_t>::max(), &begin) &&
                        as_uint(jo[1], std::numeric_limits<uint64_t>::max(), &end),
                    "data_offsets must be two non-negative integers [begin, end]");
    SIEVE_ST_TCHECK(begin <= end, "data_offsets begin " << begin << " is after end " << end);
    SIEVE_ST_TCHECK(end - begin == nbytes, "data_offsets [" << begin << ", " << end << ") span "
                                                            << end - begin << " bytes but shape and dtype "
                                                            << dtype_name(view.dtype) << " need "
                                                            << nbytes);
    SIEVE_ST_TCHECK(end <= data_size, "data_offsets end " << end << " is beyond the data section of "
                                                          << data_size << " bytes (truncated file?)");
    view.data = data + begin;
    view.nbytes = nbytes;
    auto inserted = st->tensors_.emplace(name, std::move(view));
    SIEVE_ASSERT(inserted.second);  // duplicates were rejected while parsing
    ranges.push_back({begin, end, &inserted.first->first});
#undef SIEVE_ST_TCHECK
  }

  // Like Hugging Face: the ranges must tile the data section exactly, with no overlap, no hole
  // and no trailing bytes. Zero-byte tensors sort before a non-empty one at the same offset.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Range* prev = nullptr;
  for (const Range& r : ranges) {
    SIEVE_ST_CHECK(r.begin >= covered, "tensor '" << *r.name << "' (bytes [" << r.begin << ", " << r.end
                                                  << ")) overlaps tensor '" << *prev->name
                                                  << "' (bytes [" << prev->begin << ", " << prev->end
                                                  << "))");
    SIEVE_ST_CHECK(r.begin == covered, "hole in the data section: bytes [" << covered << ", " << r.begin
                                                                          << ") before tensor '"
                                                                          << *r.name
                                                                          << "' belong to no tensor");
    covered = r.end;
    prev = &r;
  }
  SIEVE_ST_CHECK(covered == data_size, "hole in the data section: trailing bytes [" << covered << ", "
                                                                                   << data_size
                                                                                   << ") belong to no tensor");
#undef SIEVE_ST_CHECK
  return st;
}

bool SafetensorsFile::contains(const std::string& name) const { return tensors_.count(name) != 0; }

const TensorView& SafetensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  SIEVE_THROW_IF_NOT(it != tensors_.end(),
                     "safetensors file '" << path_ << "' has no tensor named '" << name << "'");
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& kv : tensors_) out.push_back(kv.first);
  return out;
}

// ---------------------------------------------------------------------------------------------
// writer

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Validate everything before touching the disk.
  std::map<std::string, const TensorToWrite*> sorted;
  for (const auto& t : tensors) {
    SIEVE_THROW_IF_NOT(t.name != "__metadata__",
                       "write_safetensors '" << path << "': a tensor cannot be named __metadata__");
    SIEVE_THROW_IF_NOT(sorted.emplace(t.name, &t).second,
                       "write_safetensors '" << path << "': duplicate tensor name '" << t.name << "'");
    int64_t numel;
    SIEVE_THROW_IF_NOT(checked_numel(t.shape, &numel),
                       "write_safetensors '" << path << "': tensor '" << t.name
                                             << "' has a negative dimension or too many elements");
    size_t nbytes;
    SIEVE_THROW_IF_NOT(checked_nbytes(numel, t.dtype, &nbytes),
                       "write_safetensors '" << path << "': tensor '" << t.name << "' has too many bytes");
    SIEVE_THROW_IF_NOT(nbytes == t.nbytes, "write_safetensors '" << path << "': tensor '" << t.name
                                                                 << "' has nbytes " << t.nbytes << " but "
                                                                 << numel << " elements of "
                                                                 << dtype_name(t.dtype) << " need "
                                                                 << nbytes);
    SIEVE_THROW_IF_NOT(t.nbytes == 0 || t.data != nullptr,
                       "write_safetensors '" << path << "': tensor '" << t.name << "' has no data");
  }

  json header = json::object();
  if (!metadata.empty()) {
    json m = json::object();
    for (const auto& kv : metadata) m[kv.first] = kv.second;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto& kv : sorted) {
    const TensorToWrite& t = *kv.second;
    json entry = json::object();
    entry["dtype"] = dtype_name(t.dtype);
    entry["shape"] = t.shape;
    entry["data_offsets"] = json::array({offset, offset + t.nbytes});
    header[t.name] = std::move(entry);
    offset += t.nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    SIEVE_THROW("write_safetensors '" << path << "': a tensor name or metadata string is not valid UTF-8 ("
                                      << e.what() << ")");
  }
  // Pad with spaces so the data starts 8-byte aligned, as Hugging Face's writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));

  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SIEVE_THROW_IF_NOT(fd >= 0, "cannot create '" << tmp << "': " << std::strerror(errno));
  try {
    write_all(fd, len, sizeof len, tmp);
    write_all(fd, text.data(), text.size(), tmp);
    for (const auto& kv : sorted)
      if (kv.second->nbytes > 0) write_all(fd, kv.second->data, kv.second->nbytes, tmp);
    SIEVE_THROW_IF_NOT(::fsync(fd) == 0, "cannot flush '" << tmp << "': " << std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    SIEVE_THROW("cannot close '" << tmp << "': " << std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    SIEVE_THROW("cannot rename '" << tmp << "' to '" << path << "': " << std::strerror(e));
  }
}

}  // namespace sieve
