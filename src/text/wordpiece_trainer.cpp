// WordPiece vocabulary training (see wordpiece_trainer.h): count words, then merge the most
// frequent adjacent pair of symbols until the vocabulary is full.
//
// Merging keeps, for every pair of adjacent symbols, its weighted count and the words it occurs
// in, so a merge only revisits the words that contain the merged pair. The most frequent pair
// comes from a max-heap whose entries may be stale: an entry is trusted only when its count equals
// the pair's current count. Counts that grow get a fresh entry; an entry whose pair shrank is
// pushed back with the smaller count when popped. So every live pair always has an entry at least
// as large as its count, and the first trusted entry popped is the true maximum.
#include "text/wordpiece_trainer.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <memory>
#include <queue>

#include "core/log.h"
#include "sieve/error.h"

namespace sieve {

namespace {

constexpr const char* kContinuation = "##";  // WordPieceOptions::continuing_prefix

// Whether a character can continue a word: punctuation and CJK ideographs are always split into
// words of their own by the basic tokenizer, so their "##" forms could never be used.
bool can_continue(char32_t cp) { return bert::classify(cp) != bert::kPunct && !bert::is_cjk(cp); }

std::string utf8_of(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

struct HeapEntry {
  int64_t count;
  uint64_t pair;
};

// Orders the heap: the larger count first; on a tie the pair whose left (then right) token has the
// lower id, i.e. was in the vocabulary earlier, as in Hugging Face's BPE trainer.
struct HeapLess {
  bool operator()(const HeapEntry& x, const HeapEntry& y) const {
    return x.count != y.count ? x.count < y.count : x.pair > y.pair;
  }
};

// Adjacent symbol pairs of a word, with multiplicity, sorted.
void sorted_pairs(const std::vector<int32_t>& syms, std::vector<uint64_t>& out) {
  out.clear();
  for (size_t i = 0; i + 1 < syms.size(); ++i) out.push_back(pair_key(syms[i], syms[i + 1]));
  std::sort(out.begin(), out.end());
}

}  // namespace

WordCounter::WordCounter(const WordPieceTrainerOptions& opt)
    : lowercase_(opt.lowercase), max_words_(opt.max_words), max_chars_(opt.max_input_chars_per_word) {}

// Mirrors WordPieceTokenizer::tokenize in wordpiece.cpp up to the point where it hands words to
// WordPiece (special-token matching aside): controls dropped, whitespace splits, CJK ideographs
// alone, then normalization and punctuation splitting per word.
void WordCounter::add_text(std::string_view text) {
  SIEVE_THROW_IF_NOT(text.size() < size_t(UINT32_MAX),
                     "text too long to count (" << text.size() << " bytes)");
  decode_utf8(text, cps_);
  raw_.clear();
  for (const CodePoint& c : cps_) {
    const char32_t cp = c.cp;
    const bert::CharClass cls = bert::classify(cp);
    if (cls == bert::kDrop) continue;
    if (cls == bert::kSpace) {
      flush_word();
      continue;
    }
    if (cp >= 0x3400 && bert::is_cjk(cp)) {
      flush_word();
      raw_.push_back({cp, 0});
      flush_word();
      continue;
    }
    raw_.push_back({cp, 0});
  }
  flush_word();
}

void WordCounter::flush_word() {
  if (raw_.empty()) return;
  bert::normalize_word(raw_, lowercase_, lowercase_, decomp_, norm_);
  raw_.clear();
  // Normalization may produce punctuation or controls (NFD), so classes are checked again here,
  // as the tokenizer does.
  auto emit = [&](size_t a, size_t b) {
    if (b - a > max_chars_) {
      ++skipped_;
      return;
    }
    word_.clear();
    for (size_t k = a; k < b; ++k) append_utf8(word_, norm_[k].cp);
    count_word(word_);
  };
  size_t start = 0;
  const size_t n = norm_.size();
  for (size_t k = 0; k < n; ++k) {
    const bert::CharClass cls = bert::classify(norm_[k].cp);
    if (cls == bert::kKeep) continue;
    if (k > start) emit(start, k);
    if (cls == bert::kPunct) emit(k, k + 1);
    start = k + 1;
  }
  if (n > start) emit(start, n);
}

void WordCounter::count_word(const std::string& word) {
  auto it = counts_.find(word);
  if (it != counts_.end()) {
    ++it->second;
  } else if (max_words_ > 0 && counts_.size() >= max_words_) {
    ++skipped_;
    return;
  } else {
    counts_.emplace(word, 1);
  }
  ++counted_;
}

void WordCounter::add_file(const std::string& path, Progress* progress) {
  std::ifstream in(path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in.is_open() && !std::filesystem::is_directory(path),
                     "cannot read text file '" << path << "'");
  std::string line;
  uint64_t bytes = 0;  // read since the last whole MiB reported
  while (std::getline(in, line)) {
    add_text(line);
    bytes += line.size() + 1;
    if (progress && bytes >= (1u << 20)) {
      progress->add(bytes >> 20);
      bytes &= (1u << 20) - 1;
    }
  }
  SIEVE_THROW_IF_NOT(in.eof(), "error while reading text file '" << path << "'");
}

std::vector<std::string> wordpiece_special_tokens(size_t num_unused) {
  std::vector<std::string> s{"[PAD]"};
  for (size_t i = 0; i < num_unused; ++i) s.push_back("[unused" + std::to_string(i) + "]");
  for (const char* t : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) s.push_back(t);
  return s;
}

WordPieceVocab train_wordpiece(const WordCounter& words, const WordPieceTrainerOptions& opt) {
  const auto& counts = words.counts();
  SIEVE_THROW_IF_NOT(!counts.empty(), "no words to train a WordPiece vocabulary on (is the text empty?)");
  SIEVE_THROW_IF_NOT(opt.vocab_size < size_t(INT32_MAX),
                     "vocabulary size " << opt.vocab_size << " is too large");
  SIEVE_THROW_IF_NOT(counts.size() < size_t(UINT32_MAX), "too many distinct words (" << counts.size() << ")");
  const uint64_t min_count = std::max<uint64_t>(1, opt.min_frequency);
  WordPieceVocab v;
  v.distinct_words = counts.size();
  v.words_counted = words.words_counted();

  // The alphabet: characters seen at least min_count times, the limit_alphabet most frequent.
  std::vector<CodePoint> cps;
  std::unordered_map<char32_t, uint64_t> char_freq;
  for (const auto& [word, count] : counts) {
    decode_utf8(word, cps);
    for (const CodePoint& c : cps) char_freq[c.cp] += count;
  }
  std::vector<std::pair<char32_t, uint64_t>> chars;
  for (const auto& [cp, n] : char_freq)
    if (n >= min_count) chars.push_back({cp, n});
  std::sort(chars.begin(), chars.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  if (opt.limit_alphabet > 0 && chars.size() > opt.limit_alphabet) chars.resize(opt.limit_alphabet);
  std::sort(chars.begin(), chars.end());
  v.alphabet_size = chars.size();

  v.tokens = wordpiece_special_tokens(opt.num_unused);
  v.num_special = v.tokens.size();
  std::unordered_map<char32_t, int32_t> head_id, tail_id;
  for (const auto& c : chars) {
    head_id[c.first] = int32_t(v.tokens.size());
    v.tokens.push_back(utf8_of(c.first));
  }
  for (const auto& c : chars) {
    if (!can_continue(c.first)) continue;
    tail_id[c.first] = int32_t(v.tokens.size());
    v.tokens.push_back(kContinuation + utf8_of(c.first));
  }
  v.char_tokens = v.tokens.size() - v.num_special;
  SIEVE_THROW_IF_NOT(v.tokens.size() <= opt.vocab_size,
                     "vocabulary size " << opt.vocab_size << " is smaller than the " << v.num_special
                                        << " special tokens plus the " << v.char_tokens
                                        << " single-character tokens of the " << v.alphabet_size
                                        << "-character alphabet; ask for at least " << v.tokens.size()
                                        << " or keep fewer characters (limit_alphabet)");
  std::unordered_map<std::string, int32_t> token_id;
  token_id.reserve(opt.vocab_size * 2);
  for (size_t i = 0; i < v.tokens.size(); ++i) token_id.emplace(v.tokens[i], int32_t(i));

  // Words as symbol ids. Single-symbol words have no pairs and play no further part; words with a
  // character outside the alphabet tokenize to [UNK] whatever is merged, so they are left out.
  std::vector<std::vector<int32_t>> syms;
  std::vector<int64_t> wcount;
  syms.reserve(counts.size());
  wcount.reserve(counts.size());
  for (const auto& [word, count] : counts) {
    decode_utf8(word, cps);
    std::vector<int32_t> s;
    s.reserve(cps.size());
    for (size_t k = 0; k < cps.size(); ++k) {
      const auto& ids = k == 0 ? head_id : tail_id;
      auto it = ids.find(cps[k].cp);
      if (it == ids.end()) break;
      s.push_back(it->second);
    }
    if (s.size() < cps.size()) {
      ++v.unencodable_words;
      continue;
    }
    if (s.size() < 2) continue;
    syms.push_back(std::move(s));
    wcount.push_back(int64_t(count));
  }

  struct PairInfo {
    int64_t count = 0;
    std::vector<uint32_t> words;  // words that contain (or once contained) the pair, no repeats in a row
  };
  std::unordered_map<uint64_t, PairInfo> pairs;
  for (size_t w = 0; w < syms.size(); ++w) {
    for (size_t i = 0; i + 1 < syms[w].size(); ++i) {
      PairInfo& p = pairs[pair_key(syms[w][i], syms[w][i + 1])];
      p.count += wcount[w];
      if (p.words.empty() || p.words.back() != uint32_t(w)) p.words.push_back(uint32_t(w));
    }
  }
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, HeapLess> heap;
  for (const auto& [key, p] : pairs) heap.push({p.count, key});

  std::unique_ptr<Progress> bar;
  if (opt.progress) bar = std::make_unique<Progress>("merges", opt.vocab_size - v.tokens.size());
  std::vector<uint64_t> old_pairs, new_pairs, grown;
  std::vector<int32_t> merged;
  auto change = [&](uint64_t key, int64_t delta, uint32_t w) {
    auto it = pairs.try_emplace(key).first;
    PairInfo& p = it->second;
    p.count += delta;
    if (delta > 0) {
      if (p.words.empty() || p.words.back() != w) p.words.push_back(w);
      grown.push_back(key);
    } else if (p.count == 0) {
      pairs.erase(it);  // no word holds it any more
    }
  };
  while (v.tokens.size() < opt.vocab_size && !heap.empty()) {
    const HeapEntry top = heap.top();
    heap.pop();
    auto found = pairs.find(top.pair);
    const int64_t current = found == pairs.end() ? 0 : found->second.count;
    if (current != top.count) {
      if (current > 0 && current < top.count) heap.push({current, top.pair});
      continue;
    }
    if (uint64_t(current) < min_count) break;

    const int32_t a = int32_t(top.pair >> 32), b = int32_t(top.pair & 0xFFFFFFFFu);
    v.merges.emplace_back(v.tokens[size_t(a)], v.tokens[size_t(b)]);
    // Two different merges can spell the same token ("a"+"##bc", "ab"+"##c"): they share its id.
    std::string spelled = v.tokens[size_t(a)] + v.tokens[size_t(b)].substr(2);
    auto [tok, added] = token_id.emplace(std::move(spelled), int32_t(v.tokens.size()));
    if (added) v.tokens.push_back(tok->first);
    const int32_t n = tok->second;

    std::vector<uint32_t> holders = std::move(found->second.words);
    found->second.words.clear();
    uint32_t last = UINT32_MAX;
    for (uint32_t w : holders) {
      if (w == last) continue;
      last = w;
      std::vector<int32_t>& s = syms[w];
      bool holds = false;
      for (size_t i = 0; i + 1 < s.size() && !holds; ++i) holds = s[i] == a && s[i + 1] == b;
      if (!holds) continue;  // merged away by an earlier merge
      sorted_pairs(s, old_pairs);
      merged.clear();
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          merged.push_back(n);
          i += 2;
        } else {
          merged.push_back(s[i++]);
        }
      }
      s.swap(merged);
      sorted_pairs(s, new_pairs);
      // Only the pairs around the merge sites differ; apply the multiset difference.
      size_t i = 0, j = 0;
      while (i < old_pairs.size() || j < new_pairs.size()) {
        if (j == new_pairs.size() || (i < old_pairs.size() && old_pairs[i] < new_pairs[j])) {
          change(old_pairs[i++], -wcount[w], w);
        } else if (i == old_pairs.size() || new_pairs[j] < old_pairs[i]) {
          change(new_pairs[j++], wcount[w], w);
        } else {
          ++i;
          ++j;
        }
      }
    }
    SIEVE_ASSERT(pairs.find(top.pair) == pairs.end());  // every occurrence was merged
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (uint64_t key : grown) {
      auto it = pairs.find(key);
      if (it != pairs.end() && it->second.count > 0) heap.push({it->second.count, key});
    }
    grown.clear();
    if (bar && added) bar->add(1);
  }
  if (bar) bar->finish();
  return v;
}

WordPieceVocab train_wordpiece_files(const std::vector<std::string>& files,
                                     const WordPieceTrainerOptions& opt) {
  SIEVE_THROW_IF_NOT(!files.empty(), "no text files to train a WordPiece vocabulary on");
  for (const auto& f : files) {
    std::error_code ec;
    SIEVE_THROW_IF_NOT(std::filesystem::is_regular_file(f, ec),
                       "cannot read text file '" << f << "': no such file (or not a regular file)");
  }
  WordCounter counter(opt);
  for (const auto& f : files) {
    if (!opt.progress) {
      counter.add_file(f);
      continue;
    }
    std::error_code ec;
    uint64_t size = std::filesystem::file_size(f, ec);
    Progress bar("count words in " + f + " (MiB)", ec ? 0 : size >> 20);
    counter.add_file(f, &bar);
    bar.finish();
  }
  return train_wordpiece(counter, opt);
}

std::string vocab_txt(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& t : tokens) {
    out += t;
    out += '\n';
  }
  return out;
}

}  // namespace sieve
