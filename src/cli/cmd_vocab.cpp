// `sieve vocab train`: a BERT WordPiece vocabulary (vocab.txt) trained from plain text.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/file_util.h"
#include "text/wordpiece_trainer.h"

namespace sieve::cli {

void register_vocab(CLI::App& app) {
  auto* group = app.add_subcommand("vocab", "WordPiece vocabularies for training a new BERT");
  group->require_subcommand(1);
  struct Opts {
    std::vector<std::string> text;
    std::string out;
    bool cased = false;
    WordPieceTrainerOptions trainer;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand("train", "Train a WordPiece vocab.txt from text files (one document or "
                                             "sentence per line)");
  cmd->add_option("--text", o->text, "Text files to learn from")->required();
  cmd->add_option("-o,--out", o->out, "Vocabulary to write (vocab.txt: one token per line, id = line)")
      ->required();
  cmd->add_option("--size", o->trainer.vocab_size, "Vocabulary size, special tokens included")
      ->capture_default_str();
  cmd->add_option("--min-frequency", o->trainer.min_frequency,
                  "Fewest occurrences for a character to be kept and for a pair to be merged")
      ->capture_default_str();
  cmd->add_flag("--cased", o->cased,
                "Keep case and accents (tokenize with do_lower_case = false); default: uncased");
  cmd->add_option("--limit-alphabet", o->trainer.limit_alphabet,
                  "Keep at most this many characters, the most frequent (0 = all)")
      ->capture_default_str();
  cmd->add_option("--max-words", o->trainer.max_words, "Count at most this many distinct words (0 = all)")
      ->capture_default_str();
  cmd->add_option("--unused", o->trainer.num_unused, "Placeholder [unusedK] tokens between [PAD] and [UNK]")
      ->capture_default_str();
  on_run(cmd, [o] {
    auto start = std::chrono::steady_clock::now();
    WordPieceTrainerOptions opt = o->trainer;
    opt.lowercase = !o->cased;
    opt.progress = true;
    WordPieceVocab v = train_wordpiece_files(o->text, opt);
    write_file_atomic(o->out, vocab_txt(v.tokens));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    nlohmann::json j = {{"vocab_size", v.tokens.size()},
                        {"specials", v.num_special},
                        {"alphabet", v.alphabet_size},
                        {"merges", v.merges.size()},
                        {"distinct_words", v.distinct_words},
                        {"words_counted", v.words_counted},
                        {"lowercase", opt.lowercase},
                        {"seconds", std::round(secs * 1000) / 1000},
                        {"out", o->out}};
    std::printf("%s\n", j.dump().c_str());
  });
}

}  // namespace sieve::cli
