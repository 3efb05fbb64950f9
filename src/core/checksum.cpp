#include "core/checksum.h"

#include <openssl/evp.h>
#include <zlib.h>
#ifdef SIEVE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#include <cstdio>
#include <vector>

#include "core/mmap_file.h"
#include "sieve/error.h"

namespace sieve {

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
#ifdef SIEVE_HAVE_ISAL
  // Intel ISA-L (Debian's libisal): the same CRC-32 (gzip's reflected polynomial, the same
  // chaining) folded with carry-less multiplies, several times zlib's speed; every record read and
  // file check goes through here (stage 2 checks ~10 MB of token codes a query).
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
#endif
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  // zlib takes a uInt length: feed large buffers in 1 GiB slices.
  while (n > 0) {
    uInt chunk = static_cast<uInt>(n > (1u << 30) ? (1u << 30) : n);
    c = ::crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

uint32_t crc32_file(const std::string& path, size_t limit) {
  MappedFile f(path);
  size_t n = f.size();
  if (limit != SIZE_MAX) {
    SIEVE_THROW_IF_NOT(limit <= f.size(), "'" << path << "' has " << f.size() << " bytes, expected at least "
                                              << limit << " (the file was truncated)");
    n = limit;
  }
  return crc32(f.data(), n);
}

std::string crc32_hex(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

std::string sha256_hex(const void* data, size_t n) {
  unsigned char digest[32];
  unsigned int len = 0;
  SIEVE_THROW_IF_NOT(EVP_Digest(n > 0 ? data : "", n, digest, &len, EVP_sha256(), nullptr) == 1 && len == 32,
                     "SHA-256 failed (OpenSSL)");
  static const char* hex = "0123456789abcdef";
  std::string out(64, '0');
  for (size_t i = 0; i < 32; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  return out;
}

std::string sha256_file_hex(const std::string& path) {
  MappedFile f(path);
  return sha256_hex(f.data(), f.size());
}

}  // namespace sieve
