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

CorpusStore::CorpusStore(const std::string& dir, const LogState& committed, const CorpusStore& prev)
    : log_(dir, "corpus", "CORP", 0, committed, prev.log_) {
  SIEVE_THROW_IF_NOT(size() >= prev.size(), "the corpus log shrank since it was opened (damaged index)");
  std::call_once(ids_once_, [&] {
    id_parts_ = prev.id_parts();
    if (size() > prev.size()) id_parts_.push_back(map_records(prev.size(), size()));
    // Few parts keep find() quick; merging the added ones costs what they hold, and folding them
    // into the first part (the whole map) comes once they are a quarter of it.
    if (id_parts_.size() > 8) {
      auto merged = std::make_shared<IdMap>();
      // Later records win (an upsert appends an id's new document).
      for (size_t p = 1; p < id_parts_.size(); ++p)
        for (const auto& [id, doc] : *id_parts_[p]) (*merged)[id] = doc;
      id_parts_.resize(1);
      if (merged->size() > id_parts_[0]->size() / 4) {
        merged->insert(id_parts_[0]->begin(), id_parts_[0]->end());  // keeps the later records' entries
        id_parts_[0] = std::move(merged);
      } else {
        id_parts_.push_back(std::move(merged));
      }
    }
  });
}

std::shared_ptr<const CorpusStore::IdMap> CorpusStore::map_records(size_t from, size_t to) const {
  auto m = std::make_shared<IdMap>();
  m->reserve(to - from);
  for (size_t i = from; i < to; ++i) (*m)[id(i)] = static_cast<uint32_t>(i);  // the latest record of an id
  return m;
}

const std::vector<std::shared_ptr<const CorpusStore::IdMap>>& CorpusStore::id_parts() const {
  std::call_once(ids_once_, [&] { id_parts_.push_back(map_records(0, size())); });
  return id_parts_;
}

int64_t CorpusStore::find(const std::string& id) const {
  const auto& parts = id_parts();
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {  // the latest part first
    auto it = (*p)->find(id);
    if (it != (*p)->end()) return static_cast<int64_t>(it->second);
  }
  return -1;
}

}  // namespace sieve::index
