// The identity an index records for its model: CRC-32s of the files that decide what the encoder
// computes (config, tokenizer files, weights). Another model, or the same model retrained, differs.
#include <sstream>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/mmap_file.h"
#include "sieve/index.h"
#include "sieve/model.h"

namespace sieve {

std::string model_identity(const std::string& model_dir) {
  ModelInfo info = read_model_info(model_dir);
  uint32_t tok = 0;
  for (const char* f : {"vocab.txt", "tokenizer.json", "tokenizer.model", "spiece.model", "tokenizer_config.json"}) {
    std::string p = path_join(model_dir, f);
    if (is_file(p)) tok = crc32(f, std::char_traits<char>::length(f), crc32_file(p) ^ tok);
  }
  uint32_t cfg = crc32_file(path_join(model_dir, "config.json"));
  MappedFile w(info.weights_path);
  std::ostringstream s;
  s << "crc32:" << crc32_hex(cfg) << "-" << crc32_hex(tok) << "-" << crc32_hex(crc32(w.data(), w.size())) << ":"
    << w.size();
  return s.str();
}

}  // namespace sieve
