// F4 at inference with the paper's single layer: the same scores as F4TransformerImpl::forward
// (eval mode), computed per map in one cache-friendly pass. Three facts make it cheap:
//  - the patch embedding is linear in phi's three channels. Inside patch (R, C) the row-max
//    channel is r_a * cmask_b (a, b: offsets in the patch), so with prefix masks its term is
//    sum_a r_a V1[a, k] where V1[a, k] = sum_{b < k} W1[., a, b] and k (0..P) counts the patch's
//    valid candidate columns; k = P everywhere but the last column patch, so one vector per patch
//    row serves all its patches. The column-max channel is the same with rows and columns
//    swapped. Only the M channel needs a product per patch (K = P*P instead of 3*P*P);
//  - [CLS] enters the layer as the same vector for every map, so its attention query, folded into
//    key space (u = W_k^T q), is a constant and a score is one dot product per patch;
//  - the head reads only [CLS], whose attended value is W_v (sum_j a_j h_j) + b_v.
// Bias, positions and both LayerNorms are applied in one pass per patch; maps are split across
// the compute threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "core/vec_math.h"
#include "sieve/encoder.h"
#include "verify/f4_transformer.h"

namespace sieve::verify {

namespace {

// out = LayerNorm(x) with weight g, bias b (biased variance, as PyTorch); tmp: D floats.
inline void layer_norm(const float* x, const float* g, const float* b, float eps, int64_t D, float* tmp, float* out) {
  const auto n = static_cast<size_t>(D);
  const float mean = sum8(x, n) / static_cast<float>(D);
  for (int64_t d = 0; d < D; ++d) tmp[d] = x[d] - mean;
  const float inv = 1.f / std::sqrt(dot8(tmp, tmp, n) / static_cast<float>(D) + eps);
  for (int64_t d = 0; d < D; ++d) out[d] = tmp[d] * inv * g[d] + b[d];
}

// Length of the mask's prefix of ones, or -1 when the mask is not such a prefix.
int64_t prefix_length(const float* mask, int64_t n) {
  int64_t len = 0;
  while (len < n && mask[len] != 0) ++len;
  for (int64_t i = len; i < n; ++i)
    if (mask[i] != 0) return -1;
  return len;
}

// out = sum_a w[a] * table[a * stride] (D-vectors), for a < P.
inline void combine(const float* w, const float* table, int64_t stride, int64_t P, int64_t D, float* out) {
  std::fill(out, out + D, 0.f);
  for (int64_t a = 0; a < P; ++a) {
    if (w[a] == 0) continue;
    const float* t = table + a * stride;
    for (int64_t d = 0; d < D; ++d) out[d] += w[a] * t[d];
  }
}

}  // namespace

at::Tensor F4TransformerImpl::score_single_layer(const Maps& m) {
  auto* layer = layers[0]->as<PreLnLayer>();
  const int64_t P = o_.patch, grid = size_ / P, D = o_.width, B = m.M.size(0), PP = P * P;
  const auto used = used_grid(m);  // (not a structured binding: C++17 lambdas cannot capture one)
  const auto rows = used.first, cols = used.second;
  const int64_t N = rows * cols;
  at::Tensor Mc = m.M.to(at::kFloat).contiguous(), qm = m.q_mask.to(at::kFloat).contiguous(),
             cm = m.c_mask.to(at::kFloat).contiguous();
  const int64_t mrows = Mc.size(1), ld = Mc.size(2);
  std::vector<int64_t> qlen(B), clen(B);
  for (int64_t b = 0; b < B; ++b) {
    qlen[b] = prefix_length(qm.data_ptr<float>() + b * qm.size(1), qm.size(1));
    clen[b] = prefix_length(cm.data_ptr<float>() + b * cm.size(1), cm.size(1));
    if (qlen[b] < 0 || clen[b] < 0) return {};  // not the maps this path is for
    qlen[b] = std::min(qlen[b], std::min(mrows, size_));
    clen[b] = std::min(clen[b], std::min(ld, size_));
  }
  const float* M = Mc.data_ptr<float>();
  const int threads = compute_threads();

  // The M channel of every patch as a row of P*P values (zero outside the valid pairs).
  at::Tensor patches = at::empty({B * N, PP}, at::kFloat);
  float* pt = patches.data_ptr<float>();
  parallel_ranges(static_cast<size_t>(B), threads, [&](size_t b0, size_t b1) {
    for (auto b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
      std::fill(pt + b * N * PP, pt + (b + 1) * N * PP, 0.f);
      for (int64_t i = 0; i < qlen[b]; ++i) {
        const float* row = M + (b * mrows + i) * ld;
        for (int64_t j = 0; j < clen[b]; ++j)
          pt[((b * rows + i / P) * cols + j / P) * PP + (i % P) * P + (j % P)] = row[j];
      }
    }
  });
  const int64_t C = o_.augmented ? 3 : 1;
  at::Tensor W = patch_embed->weight.view({D, C, P, P});
  at::Tensor G = at::mm(patches, W.select(1, 0).reshape({D, PP}).t());  // [B * N, D]

  // Tables for the row- and column-max channels: V1[a, k, :] = sum_{b < k} W1[:, a, b] and
  // V2[b, k, :] = sum_{a < k} W2[:, a, b], k = 0..P.
  at::Tensor V1, V2;
  if (o_.augmented) {
    at::Tensor z = at::zeros({D, P, 1}, at::kFloat);
    V1 = at::cat({z, W.select(1, 1).cumsum(2)}, 2).permute({1, 2, 0}).contiguous();
    V2 = at::cat({z, W.select(1, 2).cumsum(1).transpose(1, 2)}, 2).permute({1, 2, 0}).contiguous();
  }
  // Constants: bias + positions, LayerNorm parameters, [CLS]'s rows, the folded queries u.
  at::Tensor bias_pos = (pos_embed.view({-1, D}) + patch_embed->bias).contiguous();
  at::Tensor g0 = norm->weight.contiguous(), b0 = norm->bias.contiguous();
  at::Tensor g1 = layer->norm1_weight(), b1 = layer->norm1_bias();
  const auto eps0 = static_cast<float>(norm->options.eps()), eps1 = static_cast<float>(layer->norm1_eps());
  at::Tensor x_cls = at::empty({D}, at::kFloat), h_cls = at::empty({D}, at::kFloat);
  {
    at::Tensor cls_in = (cls_token.view({D}) + pos_embed.view({-1, D})[0]).contiguous();
    std::vector<float> tmp(D);
    layer_norm(cls_in.data_ptr<float>(), g0.data_ptr<float>(), b0.data_ptr<float>(), eps0, D, tmp.data(),
               x_cls.data_ptr<float>());
    layer_norm(x_cls.data_ptr<float>(), g1.data_ptr<float>(), b1.data_ptr<float>(), eps1, D, tmp.data(),
               h_cls.data_ptr<float>());
  }
  at::Tensor u = layer->folded_query(h_cls).contiguous();  // [H, D]
  const int64_t H = u.size(0);
  at::Tensor zsum = at::empty({B, H, D}, at::kFloat);

  const float *Gp = G.data_ptr<float>(), *bp = bias_pos.data_ptr<float>(), *up = u.data_ptr<float>();
  const float *g0p = g0.data_ptr<float>(), *b0p = b0.data_ptr<float>(), *g1p = g1.data_ptr<float>(),
              *b1p = b1.data_ptr<float>(), *hc = h_cls.data_ptr<float>();
  const float* v1 = o_.augmented ? V1.data_ptr<float>() : nullptr;
  const float* v2 = o_.augmented ? V2.data_ptr<float>() : nullptr;
  const int64_t kstride = (P + 1) * D;  // from a to a + 1 in V1 (b to b + 1 in V2)
  float* zp = zsum.data_ptr<float>();
  parallel_ranges(static_cast<size_t>(B), threads, [&](size_t begin, size_t end) {
    std::vector<float> h((N + 1) * D), e(D), tmp(D), t1full(D), t1(D), t2(D), rmax(rows * P), cmax(cols * P);
    std::vector<float> t2full(cols * D), s((N + 1) * H);
    for (auto b = static_cast<int64_t>(begin); b < static_cast<int64_t>(end); ++b) {
      // Row and column maxima over valid pairs (0 for invalid rows and columns).
      std::fill(rmax.begin(), rmax.end(), 0.f);
      std::fill(cmax.begin(), cmax.end(), 0.f);
      if (o_.augmented && qlen[b] > 0 && clen[b] > 0) {
        for (int64_t j = 0; j < clen[b]; ++j) cmax[j] = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < qlen[b]; ++i) {
          const float* row = M + (b * mrows + i) * ld;
          float best = row[0];
          for (int64_t j = 0; j < clen[b]; ++j) {
            best = std::max(best, row[j]);
            cmax[j] = std::max(cmax[j], row[j]);
          }
          rmax[i] = best;
        }
        for (int64_t Cc = 0; Cc < cols; ++Cc) combine(&cmax[Cc * P], v2 + P * D, kstride, P, D, &t2full[Cc * D]);
      }
      // [CLS] first, then every patch with a valid pair.
      std::copy(hc, hc + D, h.begin());
      int64_t L = 1;
      for (int64_t R = 0; R < rows; ++R) {
        const int64_t kr = std::clamp<int64_t>(qlen[b] - R * P, 0, P);
        if (kr == 0) break;
        if (o_.augmented) combine(&rmax[R * P], v1 + P * D, kstride, P, D, t1full.data());
        for (int64_t Cc = 0; Cc < cols; ++Cc) {
          const int64_t kc = std::clamp<int64_t>(clen[b] - Cc * P, 0, P);
          if (kc == 0) break;
          const float* g = Gp + ((b * rows + R) * cols + Cc) * D;
          const float* bpos = bp + (1 + R * grid + Cc) * D;
          for (int64_t d = 0; d < D; ++d) e[d] = g[d] + bpos[d];
          if (o_.augmented) {
            // The partial last column (row) patch needs its own table entry; the rest share one.
            const float* r1 = t1full.data();
            if (kc < P) {
              combine(&rmax[R * P], v1 + kc * D, kstride, P, D, t1.data());
              r1 = t1.data();
            }
            const float* r2 = &t2full[Cc * D];
            if (kr < P) {
              combine(&cmax[Cc * P], v2 + kr * D, kstride, P, D, t2.data());
              r2 = t2.data();
            }
            for (int64_t d = 0; d < D; ++d) e[d] += r1[d] + r2[d];
          }
          layer_norm(e.data(), g0p, b0p, eps0, D, tmp.data(), e.data());
          layer_norm(e.data(), g1p, b1p, eps1, D, tmp.data(), &h[L * D]);
          ++L;
        }
      }
      // Attention from [CLS] over the L used positions (empty patches are masked), per head.
      for (int64_t hd = 0; hd < H; ++hd) {
        float* sc = &s[hd * (N + 1)];
        float top = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < L; ++j) top = std::max(top, sc[j] = dot8(&h[j * D], up + hd * D, static_cast<size_t>(D)));
        float total = 0;
        for (int64_t j = 0; j < L; ++j) total += (sc[j] = std::exp(sc[j] - top));
        float* z = zp + (b * H + hd) * D;
        std::fill(z, z + D, 0.f);
        for (int64_t j = 0; j < L; ++j) {
          const float a = sc[j] / total;
          const float* hj = &h[j * D];
          for (int64_t d = 0; d < D; ++d) z[d] += a * hj[d];
        }
      }
    }
  });
  at::Tensor cls = layer->forward_from_attended(x_cls.unsqueeze(0), zsum);
  return at::tanh(head_fc2->forward(at::gelu(head_fc1->forward(cls)))).squeeze(1);
}

}  // namespace sieve::verify
