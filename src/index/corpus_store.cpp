#include "index/corpus_store.h"

#include <cstring>

#include "sieve/error.h"

namespace sieve::index {

std::string encode_document(const Document& doc) {
  uint32_t lens[3] = {static_cast<uint32_t>(doc.id.size()), static_cast<uint32_t>(doc.title.size()),
                      static_cast<uint32_t>(doc.text.size())};
  std::string out(sizeof lens, '\0');
  std::memcpy(&out[0], lens, sizeof lens);
  out += doc.id;
  out += doc.title;
  out += doc.text;
  return out;
}

Document decode_document(const uint8_t* data, size_t n) {
  uint32_t lens[3];
  SIEVE_THROW_IF_NOT(n >= sizeof lens, "corpus record too short (damaged)");
  std::memcpy(lens, data, sizeof lens);
  SIEVE_THROW_IF_NOT(uint64_t{lens[0]} + lens[1] + lens[2] + sizeof lens == n, "corpus record sizes do not add up (damaged)");
  const char* p = reinterpret_cast<const char*>(data) + sizeof lens;
  Document d;
  d.id.assign(p, lens[0]);
  d.title.assign(p + lens[0], lens[1]);
  d.text.assign(p + lens[0] + lens[1], lens[2]);
  return d;
}

CorpusStore::CorpusStore(const std::string& dir, const LogState& committed)
    : log_(dir, "corpus", "CORP", 0, committed) {}

Document CorpusStore::get(size_t doc) const {
  auto r = log_.record(doc);
  return decode_document(r.data, r.size);
}

std::string CorpusStore::id(size_t doc) const {
  auto r = log_.record(doc);
  uint32_t id_len;
  SIEVE_THROW_IF_NOT(r.size >= 12, "corpus record too short (damaged)");
  std::memcpy(&id_len, r.data, 4);
  SIEVE_THROW_IF_NOT(id_len <= r.size - 12, "corpus record sizes do not add up (damaged)");
  return std::string(reinterpret_cast<const char*>(r.data) + 12, id_len);
}

int64_t CorpusStore::find(const std::string& id) const {
  std::call_once(ids_once_, [&] {
    ids_.reserve(size());
    for (size_t i = 0; i < size(); ++i) ids_.emplace(this->id(i), static_cast<uint32_t>(i));
  });
  auto it = ids_.find(id);
  return it == ids_.end() ? -1 : static_cast<int64_t>(it->second);
}

}  // namespace sieve::index
