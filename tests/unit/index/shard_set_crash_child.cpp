// A process that dies at one step of a write to a shard set (test_shard_set_writes.cpp): it exits
// at once (no cleanup, as a kill -9) when the write reaches the step, so that the test can check
// what readers and the next writer find. A program of its own rather than a fork of the test, whose
// OpenMP pool a forked child cannot use.
//   shard_set_crash_child SET (add|delete|compact) STEP
// add: documents c0..c8; delete: d2 d31 d64 d88; compact: deletes those first (committed), then
// compacts. Exit 9: died at the step; 0: the write finished without reaching it; 2: it failed.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "index/shard_set.h"
#include "sieve/error.h"
#include "sieve/index.h"

namespace {
const char* g_step = nullptr;
void die_at(const char* step) {
  if (std::strcmp(step, g_step) == 0) ::_exit(9);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SET (add|delete|compact) STEP\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1], op = argv[2];
  g_step = argv[3];
  try {
    sieve::IndexWriter w(dir);
    const std::vector<std::string> gone = {"d2", "d31", "d64", "d88"};
    if (op == "compact") w.remove(gone);
    sieve::index::shard_set_write_step = die_at;
    if (op == "add") {
      std::vector<sieve::Document> docs;
      for (int i = 0; i < 9; ++i)
        docs.push_back({"c" + std::to_string(i), "", "a document added while dying number " + std::to_string(i)});
      w.add(docs);
    } else if (op == "delete") {
      w.remove(gone);
    } else if (op == "compact") {
      w.compact();
    } else {
      std::fprintf(stderr, "unknown operation '%s'\n", op.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "failed: %s\n", e.what());
    return 2;
  }
  return 0;
}
