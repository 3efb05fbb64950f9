// DocState (index/doc_state.h): deletions, expiry and metadata columns, and the filter evaluated
// over the columns as bitmaps. Filter::Node::matches is the one definition of what a filter
// means; the column evaluation here gives the same answer for every document (tested against it
// in test_doc_state.cpp) at the cost of a pass over the cells of the fields the filter reads.
#include "index/doc_state.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "index/filter_node.h"
#include "sieve/error.h"

namespace sieve::index {

// ---- Bitmap ------------------------------------------------------------------------------------

Bitmap::Bitmap(size_t n, bool value) : w_((n + 63) / 64, value ? ~uint64_t{0} : 0), n_(n) { clear_tail(); }

void Bitmap::clear_tail() {
  if (n_ % 64 != 0 && !w_.empty()) w_.back() &= (uint64_t{1} << (n_ % 64)) - 1;
}

size_t Bitmap::count() const {
  size_t c = 0;
  for (uint64_t w : w_) c += static_cast<size_t>(__builtin_popcountll(w));
  return c;
}

void Bitmap::and_with(const Bitmap& o) {
  for (size_t i = 0; i < w_.size(); ++i) w_[i] &= i < o.w_.size() ? o.w_[i] : 0;
}

void Bitmap::and_not(const Bitmap& o) {
  for (size_t i = 0; i < w_.size() && i < o.w_.size(); ++i) w_[i] &= ~o.w_[i];
}

void Bitmap::or_with(const Bitmap& o) {
  for (size_t i = 0; i < w_.size() && i < o.w_.size(); ++i) w_[i] |= o.w_[i];
  clear_tail();
}

void Bitmap::flip() {
  for (uint64_t& w : w_) w = ~w;
  clear_tail();
}

void Bitmap::resize(size_t n) {
  if (n < n_) {
    n_ = n;
    w_.resize((n + 63) / 64);
    clear_tail();
    return;
  }
  n_ = n;
  w_.resize((n + 63) / 64, 0);
}

size_t Bitmap::next_set(size_t from) const {
  if (from >= n_) return n_;
  size_t i = from >> 6;
  uint64_t w = w_[i] & (~uint64_t{0} << (from & 63));
  while (w == 0) {
    if (++i >= w_.size()) return n_;
    w = w_[i];
  }
  return std::min(n_, i * 64 + static_cast<size_t>(__builtin_ctzll(w)));
}

std::vector<uint32_t> Bitmap::ones(size_t first) const {
  std::vector<uint32_t> out;
  for (size_t i = first >> 6; i < w_.size(); ++i) {
    uint64_t w = w_[i];
    if (i == (first >> 6) && (first & 63) != 0) w &= ~uint64_t{0} << (first & 63);
    for (; w != 0; w &= w - 1)
      out.push_back(static_cast<uint32_t>(i * 64 + static_cast<size_t>(__builtin_ctzll(w))));
  }
  return out;
}

// ---- records -----------------------------------------------------------------------------------

std::string encode_metadata_record(const Document& doc) {
  std::string out(sizeof(double), '\0');
  std::memcpy(&out[0], &doc.expires_at, sizeof(double));
  out += doc.metadata;
  return out;
}

void decode_metadata_record(const uint8_t* data, size_t n, std::string* metadata, double* expires_at) {
  SIEVE_THROW_IF_NOT(n >= sizeof(double), "a metadata record of " << n << " bytes (damaged)");
  double t;
  std::memcpy(&t, data, sizeof t);
  if (expires_at) *expires_at = t;
  if (metadata) metadata->assign(reinterpret_cast<const char*>(data) + sizeof(double), n - sizeof(double));
}

std::string encode_delete_record(const std::vector<uint32_t>& docs) {
  std::string out(docs.size() * sizeof(uint32_t), '\0');
  if (!docs.empty()) std::memcpy(&out[0], docs.data(), out.size());
  return out;
}

double clock_or(double now) {
  if (now != 0) return now;
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ---- columns -----------------------------------------------------------------------------------

namespace {

// One value of a field in one document: a string (its id among the column's strings, and its
// instant when it reads as an RFC 3339 date, else NaN), a number or a boolean (x = 0 or 1).
struct Cell {
  enum Type : uint8_t { Str, Num, Bool };
  double x = 0;
  uint32_t s = 0;
  Type type = Str;
};

// A field over a segment's rows: row r's values are cells[start[r], start[r + 1]) (a list has
// several, a scalar one); `present` marks rows that have the field (an empty list has no cells).
struct Column {
  std::vector<uint32_t> start;
  std::vector<Cell> cells;
  Bitmap present;
  std::unordered_map<std::string, uint32_t> strings;
  size_t filled = 0;  // rows whose start is set, while building

  void fill_to(size_t row) {  // rows before `row` have no (more) cells
    while (filled < row) start[++filled] = static_cast<uint32_t>(cells.size());
  }
  Cell cell_of(const filter_detail::json& v) {
    Cell c;
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      c.type = Cell::Str;
      c.s = strings.emplace(s, static_cast<uint32_t>(strings.size())).first->second;
      if (!parse_rfc3339(s, &c.x)) c.x = std::numeric_limits<double>::quiet_NaN();
    } else if (v.is_boolean()) {
      c.type = Cell::Bool;
      c.x = v.get<bool>() ? 1 : 0;
    } else {
      c.type = Cell::Num;
      c.x = v.get<double>();
    }
    return c;
  }
  // The id of `s` among this column's strings, or -1.
  int64_t string_id(const std::string& s) const {
    auto it = strings.find(s);
    return it == strings.end() ? -1 : static_cast<int64_t>(it->second);
  }
};

struct Columns {
  std::unordered_map<std::string, Column> by_field;
};

}  // namespace

struct DocState::Segment {
  uint32_t first = 0;
  size_t rows = 0;
  std::shared_ptr<const RecordLogReader> log;
  std::vector<std::pair<double, uint32_t>> expiry;  // (instant, document), by instant
  std::once_flag built;
  std::unique_ptr<Columns> columns;

  const Columns& cols() {
    std::call_once(built, [&] {
      auto c = std::make_unique<Columns>();
      std::string text;
      for (size_t r = 0; r < rows; ++r) {
        const auto rec = log->record(first + r);
        decode_metadata_record(rec.data, rec.size, &text, nullptr);
        if (text.empty()) continue;
        const auto j = filter_detail::json::parse(text, nullptr, false);
        SIEVE_THROW_IF_NOT(j.is_object(), "the metadata of document " << first + r << " is not a JSON object (damaged)");
        for (const auto& [key, v] : j.items()) {
          auto [it, fresh] = c->by_field.try_emplace(key);
          Column& col = it->second;
          if (fresh) {
            col.start.assign(rows + 1, 0);
            col.present = Bitmap(rows);
          }
          col.fill_to(r);
          col.present.set(r);
          if (v.is_array()) {
            for (const auto& e : v) col.cells.push_back(col.cell_of(e));
          } else {
            col.cells.push_back(col.cell_of(v));
          }
          col.start[++col.filled] = static_cast<uint32_t>(col.cells.size());
        }
      }
      for (auto& [name, col] : c->by_field) col.fill_to(rows);
      columns = std::move(c);
    });
    return *columns;
  }
};

namespace {

bool equal(const Cell& c, const Value& o, int64_t sid) {
  switch (o.type) {
    case Value::Num: return c.type == Cell::Num && c.x == o.n;
    case Value::Bool: return c.type == Cell::Bool && (c.x != 0) == o.b;
    case Value::Str:
      return c.type == Cell::Str && ((sid >= 0 && c.s == static_cast<uint64_t>(sid)) || (o.date && c.x == o.t));
  }
  return false;
}

bool in_range(const Cell& c, Op op, const Value& o) {
  double bound;
  if (o.type == Value::Num) {
    if (c.type != Cell::Num) return false;
    bound = o.n;
  } else {
    if (c.type != Cell::Str || std::isnan(c.x)) return false;
    bound = o.t;
  }
  switch (op) {
    case Op::Gt: return c.x > bound;
    case Op::Gte: return c.x >= bound;
    case Op::Lt: return c.x < bound;
    case Op::Lte: return c.x <= bound;
    default: return false;
  }
}

}  // namespace

// ---- DocState ----------------------------------------------------------------------------------

DocState::DocState(size_t documents, std::shared_ptr<const RecordLogReader> meta, const RecordLogReader* deletes)
    : documents_(documents), deleted_(documents) {
  if (meta) add_segment(std::move(meta), 0);
  read_deletes(deletes);
}

DocState::DocState(const DocState& prev, size_t documents, std::shared_ptr<const RecordLogReader> meta,
                   const RecordLogReader* deletes)
    : documents_(documents),
      deleted_(prev.deleted_),
      deleted_count_(prev.deleted_count_),
      delete_records_(prev.delete_records_),
      covered_(prev.covered_),
      segments_(prev.segments_) {
  SIEVE_THROW_IF_NOT(documents >= prev.documents_, "internal: a document state that shrank");
  deleted_.resize(documents);
  if (meta) {
    if (segments_.size() >= 16) {  // one segment again (its columns are read anew when needed)
      segments_.clear();
      covered_ = 0;
    }
    add_segment(std::move(meta), covered_);
  }
  read_deletes(deletes);
}

DocState::~DocState() = default;

void DocState::add_segment(std::shared_ptr<const RecordLogReader> meta, size_t from) {
  SIEVE_THROW_IF_NOT(meta->size() == documents_, "the metadata log holds " << meta->size() << " records for "
                                                                           << documents_ << " documents (damaged index)");
  if (from >= meta->size()) return;
  auto seg = std::make_shared<Segment>();
  seg->first = static_cast<uint32_t>(from);
  seg->rows = meta->size() - from;
  seg->log = std::move(meta);
  for (size_t r = 0; r < seg->rows; ++r) {
    const auto rec = seg->log->record(from + r);
    double t;
    decode_metadata_record(rec.data, rec.size, nullptr, &t);
    if (t != 0) seg->expiry.emplace_back(t, static_cast<uint32_t>(from + r));
  }
  std::sort(seg->expiry.begin(), seg->expiry.end());
  covered_ = from + seg->rows;
  segments_.push_back(std::move(seg));
}

void DocState::read_deletes(const RecordLogReader* deletes) {
  if (deletes == nullptr) return;
  for (; delete_records_ < deletes->size(); ++delete_records_) {
    const auto rec = deletes->record(delete_records_);
    SIEVE_THROW_IF_NOT(rec.size % sizeof(uint32_t) == 0, "delete record " << delete_records_ << " is damaged");
    for (size_t i = 0; i < rec.size / sizeof(uint32_t); ++i) {
      uint32_t d;
      std::memcpy(&d, rec.data + i * sizeof d, sizeof d);
      SIEVE_THROW_IF_NOT(d < documents_, "delete record " << delete_records_ << " names document " << d
                                                          << " of " << documents_ << " (damaged index)");
      if (!deleted_.test(d)) {
        deleted_.set(d);
        ++deleted_count_;
      }
    }
  }
}

bool DocState::has_expiry() const {
  return std::any_of(segments_.begin(), segments_.end(), [](const auto& s) { return !s->expiry.empty(); });
}

bool DocState::expired(uint32_t doc, double now) const {
  for (const auto& s : segments_)
    if (doc >= s->first && doc < s->first + s->rows) {
      if (s->expiry.empty()) return false;
      const auto rec = s->log->record(doc);
      double t;
      decode_metadata_record(rec.data, rec.size, nullptr, &t);
      return t != 0 && t <= clock_or(now);
    }
  return false;
}

std::shared_ptr<const Bitmap> DocState::allowed(const Filter& filter, double now) const {
  std::vector<uint32_t> gone;  // expired at `now`
  if (has_expiry()) {
    const double t = clock_or(now);
    for (const auto& s : segments_)
      for (const auto& [at, doc] : s->expiry) {
        if (at > t) break;
        gone.push_back(doc);
      }
  }
  if (filter.empty() && deleted_count_ == 0 && gone.empty()) return nullptr;
  std::shared_ptr<const Bitmap> passing = filter.empty() ? nullptr : evaluated(filter);
  if (passing != nullptr && deleted_count_ == 0 && gone.empty()) return passing;
  auto out = std::make_shared<Bitmap>(passing != nullptr ? *passing : Bitmap(documents_, true));
  out->and_not(deleted_);
  for (uint32_t d : gone) out->reset(d);
  return out;
}

std::shared_ptr<const Bitmap> DocState::evaluated(const Filter& filter) const {
  std::string key = filter.to_json();
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    for (size_t i = 0; i < cache_.size(); ++i)
      if (cache_[i].first == key) {
        std::rotate(cache_.begin(), cache_.begin() + static_cast<std::ptrdiff_t>(i),
                    cache_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return cache_.front().second;
      }
  }
  auto b = std::make_shared<const Bitmap>(evaluate(filter.root()));  // outside the lock
  std::lock_guard<std::mutex> lock(cache_mu_);
  cache_.insert(cache_.begin(), {std::move(key), b});
  if (cache_.size() > kCachedFilters) cache_.pop_back();
  return b;
}

std::vector<uint32_t> DocState::matching(const Filter& filter, double now) const {
  auto a = allowed(filter, now);
  if (a) return a->ones();
  std::vector<uint32_t> all(documents_);
  for (size_t i = 0; i < documents_; ++i) all[i] = static_cast<uint32_t>(i);
  return all;
}

Bitmap DocState::evaluate(const Filter::Node& node) const {
  using Kind = Filter::Node::Kind;
  switch (node.kind) {
    case Kind::All: return Bitmap(documents_, true);
    case Kind::And: {
      Bitmap b = evaluate(*node.children[0]);
      for (size_t i = 1; i < node.children.size(); ++i) b.and_with(evaluate(*node.children[i]));
      return b;
    }
    case Kind::Or: {
      Bitmap b = evaluate(*node.children[0]);
      for (size_t i = 1; i < node.children.size(); ++i) b.or_with(evaluate(*node.children[i]));
      return b;
    }
    case Kind::Not: {
      Bitmap b = evaluate(*node.children[0]);
      b.flip();
      return b;
    }
    case Kind::Field: break;
  }
  // A field: the positive form ($eq, $in, a range, $exists: true) over the cells; $ne, $nin and
  // $exists: false are its complement (a document without the field passes them).
  Op op = node.op;
  bool negate = false;
  if (op == Op::Ne) op = Op::Eq, negate = true;
  if (op == Op::Nin) op = Op::In, negate = true;
  if (op == Op::Exists && !node.exists) negate = true;
  Bitmap b(documents_);
  for (const auto& seg : segments_) {
    const Columns& cols = seg->cols();
    const auto it = cols.by_field.find(node.field);
    if (it == cols.by_field.end()) continue;
    const Column& col = it->second;
    std::vector<int64_t> sids;
    for (const Value& o : node.operands) sids.push_back(o.type == Value::Str ? col.string_id(o.s) : -1);
    for (size_t r = 0; r < seg->rows; ++r) {
      if (!col.present.test(r)) continue;
      bool hit = false;
      if (op == Op::Exists) {
        hit = true;
      } else {
        for (uint32_t c = col.start[r]; c < col.start[r + 1] && !hit; ++c) {
          const Cell& cell = col.cells[c];
          if (op == Op::Eq || op == Op::In) {
            for (size_t k = 0; k < node.operands.size() && !hit; ++k) hit = equal(cell, node.operands[k], sids[k]);
          } else {
            hit = in_range(cell, op, node.operands[0]);
          }
        }
      }
      if (hit) b.set(seg->first + r);
    }
  }
  if (negate) b.flip();
  return b;
}

}  // namespace sieve::index
