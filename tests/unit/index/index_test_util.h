// Shared helpers of the index tests: a cached fixture model, generated corpora, file damage.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve::test {

inline const char* const kWords[] = {"the",  "dog",   "bit",   "man",  "red",   "car",  "left",  "of",    "house",
                              "not",  "blue",  "cat",   "sat",  "on",    "mat",  "under", "tree",  "big",
                              "small", "river", "stone", "bird", "green", "door", "city",  "light", "water"};

inline std::string model_dir(uint64_t seed = 42) {
  static std::map<uint64_t, std::string> dirs;
  auto it = dirs.find(seed);
  if (it != dirs.end()) return it->second;
  std::string dir = make_temp_dir("idx_model");
  FixtureModelOptions f = tiny_model_options(seed);
  write_fixture_model(dir, f);
  return dirs[seed] = dir;
}

// `n` documents with ids d<first>..., random word sequences.
inline std::vector<Document> make_docs(size_t n, size_t first = 0, uint32_t seed = 1) {
  std::mt19937 rng(seed + static_cast<uint32_t>(first));
  std::vector<Document> docs;
  for (size_t i = 0; i < n; ++i) {
    Document d;
    d.id = "d" + std::to_string(first + i);
    d.title = (i % 3 == 0) ? "" : std::string(kWords[rng() % 27]) + " " + kWords[rng() % 27];
    size_t len = 4 + rng() % 40;
    for (size_t w = 0; w < len; ++w) d.text += std::string(w ? " " : "") + kWords[rng() % 27];
    docs.push_back(d);
  }
  return docs;
}

inline std::string write_jsonl(const std::string& dir, const std::string& name, const std::vector<Document>& docs) {
  std::string path = dir + "/" + name;
  std::ofstream f(path);
  for (const auto& d : docs)
    f << "{\"_id\": \"" << d.id << "\", \"title\": \"" << d.title << "\", \"text\": \"" << d.text << "\"}\n";
  return path;
}

inline std::string write_text(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

inline std::string expected_encoder_input(const Document& d) { return d.title.empty() ? d.text : d.title + " " + d.text; }

// The reference for what an index stores: the fixture encoder run directly on the documents'
// texts, with token states.
inline Embeddings encode_docs(const std::vector<Document>& docs, uint64_t seed = 42) {
  auto enc = Encoder::load(model_dir(seed));
  std::vector<std::string> texts;
  for (const auto& d : docs) texts.push_back(expected_encoder_input(d));
  EncodeCall call;
  call.token_states = true;
  return enc->encode(texts, call);
}

inline IndexBuildOptions small_opts() {
  IndexBuildOptions o;
  o.chunk_docs = 16;
  return o;
}

}  // namespace sieve::test
