// CRC-32 (the zlib/PNG polynomial) for file and record checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sieve {

/// CRC-32 of `n` bytes, continuing from `crc` (0 for a fresh checksum): crc32(a+b) ==
/// crc32(b, crc32(a)), which lets append-only files extend their checksum.
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

/// CRC-32 of the first `limit` bytes of a file (all of it when limit is SIZE_MAX); throws
/// sieve::Error when the file cannot be read or is shorter than `limit`.
uint32_t crc32_file(const std::string& path, size_t limit = SIZE_MAX);

/// Eight lowercase hex digits.
std::string crc32_hex(uint32_t crc);

}  // namespace sieve
