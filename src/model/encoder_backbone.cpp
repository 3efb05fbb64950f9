#include "model/encoder_backbone.h"

#include "model/bert.h"
#include "model/modernbert.h"
#include "model/mpnet.h"
#include "sieve/error.h"

namespace sieve {

std::shared_ptr<EncoderBackbone> make_encoder_backbone(const BertConfig& config, double dropout) {
  if (config.model_type == "modernbert") return std::make_shared<ModernBertModelImpl>(config, dropout);
  SIEVE_THROW_IF_NOT(config.model_type == "bert" || uses_roberta_positions(config),  // incl. mpnet
                     "model_type '" << config.model_type << "' is not supported (" << supported_model_types() << ")");
  BertOptions bo;
  bo.config = config;
  bo.dropout = dropout;
  if (config.model_type == "mpnet") return std::make_shared<MpnetModelImpl>(bo);
  return std::make_shared<BertModelImpl>(bo);
}

}  // namespace sieve
