// Tensor-parallel layers one at a time, against the unsharded nn/ layer on the same full
// weights: ColumnParallelLinear (with the gathered output), RowParallelLinear, the
// vocab-parallel embedding and head + cross-entropy (vocab 67: padded on every TP size), with
// and without sequence parallelism. Then what SP and recomputation buy, measured: activation
// memory, and the TP-replicated parameters staying identical on every TP rank.
#include <random>

#include <trident/tp/linear.hpp>
#include <trident/tp/vocab_parallel.hpp>

#include "parity.hpp"

using namespace trident;

namespace {
std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> v(n);
  for (double& x : v) x = normal(gen);
  return v;
}
// This rank's block of a global (rows, cols) tensor under a placement.
std::vector<double> block(const std::vector<double>& g, std::int64_t rows, std::int64_t cols,
                          Placement p, const Comm& tp, std::int64_t padded = 0) {
  const ShardLayout l(
      rows == 1 ? std::vector<std::int64_t>{cols} : std::vector<std::int64_t>{rows, cols}, p,
      tp.size(), tp.rank(), padded);
  std::vector<double> out(l.local_numel());
  fill_local(l, out.data(), [&](std::int64_t k) { return g[k]; });
  return out;
}
double max_diff(const double* a, const double* b, std::size_t n) {
  double d = 0;
  for (std::size_t k = 0; k < n; ++k) d = std::max(d, std::abs(a[k] - b[k]));
  return d;
}
}  // namespace

TEST_CASE("Column- then row-parallel linear equal the unsharded pair, forward and backward") {
  for (int t : {2, 4})
    for (bool sp : {false, true}) {
      auto comm = test::first_ranks(t, test::current_test_name());
      if (!comm) continue;
      INFO("TP=" << t << std::string(sp ? " SP" : ""));
      const TensorParallel tp{&*comm, sp};
      const int N = 8, I = 6, H = 8, O = 5, n = tp.local_rows(N);  // x (N, I) -> (N, H) -> (N, O)
      const auto x = random_vector(N * I, 1), w1 = random_vector(I * H, 2),
                 b1 = random_vector(H, 3);
      const auto w2 = random_vector(H * O, 4), b2 = random_vector(O, 5),
                 dy = random_vector(N * O, 6);
      // unsharded reference
      std::vector<double> h(N * H), y(N * O), dh(N * H), dx(N * I), dw1(I * H, 0), db1(H, 0),
          dw2(H * O, 0), db2(O, 0);
      nn::linear_forward(h.data(), x.data(), w1.data(), b1.data(), N, I, H);
      nn::linear_forward(y.data(), h.data(), w2.data(), b2.data(), N, H, O);
      nn::linear_backward(dh.data(), dw2.data(), db2.data(), dy.data(), h.data(), w2.data(), N, H,
                          O);
      nn::linear_backward(dx.data(), dw1.data(), db1.data(), dh.data(), x.data(), w1.data(), N, I,
                          H);
      // sharded: rows [r n, (r+1) n) under SP, all rows otherwise
      const int Hl = H / t, row0 = sp ? comm->rank() * n : 0;
      const ColumnParallelLinear<double> col{I, Hl};
      const RowParallelLinear<double> row{Hl, O};
      const auto w1l = block(w1, I, H, Placement::Shard(1), *comm),
                 b1l = block(b1, 1, H, Placement::Shard(0), *comm);
      const auto w2l = block(w2, H, O, Placement::Shard(0), *comm);
      std::vector<double> xl(x.begin() + row0 * I, x.begin() + (row0 + n) * I), xfull(N * I);
      std::vector<double> hl(N * Hl), yl(n * O), ypart(N * O);
      const double* used =
          col.forward(tp, hl.data(), xl.data(), xfull.data(), w1l.data(), b1l.data(), N);
      row.forward(tp, yl.data(), ypart.data(), hl.data(), w2l.data(), b2.data(), N);
      CHECK(max_diff(yl.data(), y.data() + row0 * O, n * O) <= 1e-12);
      std::vector<double> hfull(N * H);  // Megatron's gather_output
      gather_columns(tp, hfull.data(), hl.data(), N, Hl);
      CHECK(max_diff(hfull.data(), h.data(), N * H) <= 1e-12);
      std::vector<double> dyl(dy.begin() + row0 * O, dy.begin() + (row0 + n) * O), dyfull(N * O);
      std::vector<double> dhl(N * Hl), dw2l(Hl * O, 0), db2l(O, 0), dxl(n * I), dxfull(N * I),
          dw1l(I * Hl, 0), db1l(Hl, 0);
      row.backward(tp, dhl.data(), dw2l.data(), db2l.data(), dyl.data(), dyfull.data(), hl.data(),
                   w2l.data(), N);
      col.backward(tp, sp ? dxl.data() : dxfull.data(), dxfull.data(), dw1l.data(), db1l.data(),
                   dhl.data(), used, w1l.data(), N);
      CHECK(max_diff(sp ? dxl.data() : dxfull.data(), dx.data() + row0 * I, n * I) <= 1e-12);
      CHECK(max_diff(dw1l.data(), block(dw1, I, H, Placement::Shard(1), *comm).data(), I * Hl) <=
            1e-12);
      CHECK(max_diff(db1l.data(), block(db1, 1, H, Placement::Shard(0), *comm).data(), Hl) <=
            1e-12);
      CHECK(max_diff(dw2l.data(), block(dw2, H, O, Placement::Shard(0), *comm).data(), Hl * O) <=
            1e-12);
      if (sp)
        comm->all_reduce(Span<double>(db2l));  // a replicated bias: partial per sequence shard
      CHECK(max_diff(db2l.data(), db2.data(), O) <= 1e-12);
    }
}

// N token ids below V: (k step + first) mod V.
static std::vector<std::int32_t> token_ids(int N, int V, int step, int first) {
  std::vector<std::int32_t> ids(N);
  for (int k = 0; k < N; ++k) ids[k] = (k * step + first) % V;
  return ids;
}

TEST_CASE("vocab-parallel embedding, LM head and cross-entropy equal the unsharded ones") {
  for (int t : {2, 4})
    for (bool sp : {false, true}) {
      auto comm = test::first_ranks(t, test::current_test_name());
      if (!comm) continue;
      INFO("TP=" << t << std::string(sp ? " SP" : ""));
      const TensorParallel tp{&*comm, sp};
      const int V = 67, C = 6, seq = 4, B = 2, N = seq * B, n = tp.local_rows(N),
                row0 = sp ? comm->rank() * n : 0;
      const std::int64_t Vp = (V + t - 1) / t * t;
      const ShardLayout vl({V, C}, Placement::Shard(0), t, comm->rank(), Vp);
      const auto wte = random_vector(V * C, 7), wpe = random_vector(seq * C, 8),
                 dh = random_vector(N * C, 9);
      const std::vector<std::int32_t> tokens = token_ids(N, V, 29, 3),
                                      targets = token_ids(N, V, 17, 66);
      // unsharded
      std::vector<double> h(N * C, 0), dwte(V * C, 0), dwpe(seq * C, 0), losses(N), probs(N * V),
          logits(N * V);
      nn::token_embedding_forward(h.data(), tokens.data(), wte.data(), N, C, 0, V);
      nn::position_embedding_forward(h.data(), wpe.data(), N, B, 0, C);
      backend::gemm(backend::view(logits.data(), N, V), backend::cview(h.data(), N, C),
                    backend::cview(wte.data(), V, C), false, true, 0.0);
      nn::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, 0,
                                V);
      // sharded
      const auto wtel = block(wte, V, C, Placement::Shard(0), *comm, Vp);
      const int rows = static_cast<int>(vl.local_rows()), begin = static_cast<int>(vl.offset());
      const VocabParallelEmbedding<double> emb{begin, rows, C};
      const VocabParallelHead<double> head{begin, rows, V, C};
      std::vector<double> hl(n * C), partial(N * C), lossl(N), probl(N * rows), hfull(N * C);
      emb.forward(tp, hl.data(), partial.data(), tokens.data(), wtel.data(), wpe.data(), N, B);
      CHECK(max_diff(hl.data(), h.data() + row0 * C, n * C) <= 1e-12);
      const double* used = head.forward(tp, lossl.data(), probl.data(), hl.data(), hfull.data(),
                                        wtel.data(), targets.data(), N);
      CHECK(max_diff(lossl.data(), losses.data(), N) <= 1e-12);
      // backward of the head (loss mean) and of the embedding (a given dh)
      const double scale = 1.0 / N;
      std::vector<double> dlogits(N * V), dhh(N * C), dwtel(wtel.size(), 0), dhl(n * C),
          dfull(N * C);
      nn::cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), scale, N, V, 0);
      backend::gemm(backend::view(dwte.data(), V, C), backend::cview(dlogits.data(), N, V),
                    backend::cview(h.data(), N, C), true, false, 1.0);
      backend::gemm(backend::view(dhh.data(), N, C), backend::cview(dlogits.data(), N, V),
                    backend::cview(wte.data(), V, C), false, false, 0.0);
      head.backward(tp, sp ? dhl.data() : dfull.data(), dfull.data(), dwtel.data(), probl.data(),
                    targets.data(), used, wtel.data(), scale, N);
      CHECK(max_diff(sp ? dhl.data() : dfull.data(), dhh.data() + row0 * C, n * C) <= 1e-12);
      nn::position_embedding_backward(dwpe.data(), dh.data(), N, B, 0, C);
      nn::token_embedding_backward(dwte.data(), dh.data(), tokens.data(), N, C, 0, V);
      std::vector<double> dwpel(seq * C, 0);
      emb.backward(tp, dwtel.data(), dwpel.data(), dh.data() + row0 * C, dfull.data(),
                   tokens.data(), N, B);
      CHECK(max_diff(dwtel.data(), block(dwte, V, C, Placement::Shard(0), *comm, Vp).data(),
                     dwtel.size()) <= 1e-12);
      if (sp) comm->all_reduce(Span<double>(dwpel));  // positions split over the sequence shards
      CHECK(max_diff(dwpel.data(), dwpe.data(), seq * C) <= 1e-12);
    }
}

TEST_CASE(
    "sequence parallelism divides the LayerNorm/residual activations by TP; recompute keeps inputs "
    "only") {
  TRIDENT_RANKS(2, comm);
  auto peak = [&](bool sp, Recompute recompute) {
    gpt2::Options o = test::small_options({2, 1, 1});
    o.sequence_parallel = sp;
    o.recompute = recompute;
    gpt2::Trainer<double> t(comm, o, TokenSource::synthetic(o.model.vocab));
    memory_stats().reset_peaks();
    const std::size_t before = memory_stats().current(MemoryKind::activations);
    (void)t.step();
    return double(memory_stats().peak(MemoryKind::activations) - before);
  };
  const gpt2::Options o = test::small_options({2, 1, 1});
  const double N = double(o.model.seq) * o.batch, C = o.model.hidden, L = o.model.layers, t = 2;
  // per block: x, x2 (n C) and four LayerNorm statistics (n); the head: its input and two
  // statistics: held for n = N / t rows instead of N (Korthikanti et al. 2022, §4.2.2)
  const double regions = (L * (2 * C + 4) + C + 2) * sizeof(double);
  CHECK(peak(false, Recompute::none) - peak(true, Recompute::none) == N * (1 - 1 / t) * regions);
  // full recomputation keeps each block's input alone (GPipe's re-materialisation): the peak
  // is then all the inputs and one block's activations, replayed for its backward, instead of
  // all blocks' activations
  const double seq = o.model.seq, B = o.batch, Cl = C / t, Hl = o.model.heads / t;
  const double rest =
      (4 * N + 2 * N * C + 3 * N * Cl + B * Hl * seq * seq + N * Cl + N * C + 8 * N * Cl) *
      sizeof(double);  // a block's activations but its input
  CHECK(peak(false, Recompute::none) - peak(false, Recompute::full) == (L - 1) * rest);
}

TEST_CASE("TP-replicated parameters stay bit-identical on every TP rank, with SP") {
  TRIDENT_RANKS(4, comm);
  gpt2::Options o = test::small_options({4, 1, 1});
  o.sequence_parallel = true;
  gpt2::Trainer<double> t(comm, o, TokenSource::synthetic(o.model.vocab));
  for (int s = 0; s < 3; ++s) (void)t.step();
  UnitStore<double>& st = t.chunk(0).store();
  for (int u = 0; u < st.size(); ++u) {
    const double* p = st.gather_parameters(u);
    for (const LocalParam& lp : st.layout(u).params) {
      if (!lp.tp_replicated()) continue;
      std::vector<double> mine(p + lp.offset, p + lp.offset + lp.numel), hi = mine, lo = mine;
      comm.all_reduce(Span<double>(hi), ReduceOp::max);
      comm.all_reduce(Span<double>(lo), ReduceOp::min);
      INFO(lp.spec.name);
      CHECK(hi == lo);
    }
  }
}
