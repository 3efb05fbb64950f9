// A GoogleTest fixture that loads Debian's WordNet once per suite and skips (with a message) where
// it is not installed.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "nearmiss/lexicon.h"

namespace sieve::test {

class WordNetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (nearmiss::Lexicon::available()) lexicon_ = nearmiss::Lexicon::load();
  }
  static void TearDownTestSuite() { lexicon_.reset(); }
  void SetUp() override {
    if (!lexicon_) GTEST_SKIP() << "WordNet not installed (apt install wordnet-base)";
  }
  static const nearmiss::Lexicon& lx() { return *lexicon_; }
  inline static std::unique_ptr<nearmiss::Lexicon> lexicon_;
};

}  // namespace sieve::test
