// config.json (BERT, RoBERTa, XLM-R, ModernBERT, MPNet) on arbitrary bytes; a parsed config
// must serialise and parse back.
#include "fuzz_target.h"
#include "sieve/model.h"

SIEVE_FUZZ_TARGET(model_config) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sieve::fuzz::expect_only_sieve_errors([&] {
    const sieve::BertConfig c = sieve::parse_bert_config(text);
    sieve::parse_bert_config(sieve::bert_config_to_json(c), "round trip");
  });
  return 0;
}
