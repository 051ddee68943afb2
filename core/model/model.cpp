#include "core/model/model.hpp"

namespace decodebench {

namespace {
void add_tensor(ModelInfo& info, const TensorView& t, bool read_per_token) {
  if (!t.present()) return;
  info.parameters += t.rows * t.cols;
  info.weight_bytes += t.bytes();
  if (read_per_token) info.bytes_per_token += t.bytes();
  auto& s = info.tensor_types[weight_traits(t.type).name];
  s.count += 1;
  s.bytes += t.bytes();
}
}  // namespace

void compute_model_info(Model& model) {
  ModelInfo& info = model.info;
  info.parameters = 0;
  info.weight_bytes = 0;
  info.bytes_per_token = 0;
  info.tensor_types.clear();
  const ModelWeights& w = model.weights;
  // The embedding matrix is stored once; a step reads one row of it (plus all of it again when it
  // is also the LM head).
  add_tensor(info, w.token_embd, false);
  info.bytes_per_token += w.token_embd.row_bytes();
  for (const auto& l : w.layers) {
    for (const TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.q_norm,
                                &l.k_norm, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      add_tensor(info, *t, true);
    }
  }
  add_tensor(info, w.output_norm, true);
  if (model.config.tied_embeddings) {
    info.bytes_per_token += w.output.bytes();
  } else {
    add_tensor(info, w.output, true);
  }
}

}  // namespace decodebench
