// The tensor-parallel layers on sharded tensors (tp/linear.hpp, tp/vocab_parallel.hpp): each
// layer's ShardedTensor form against the unsharded nn/ layer on the same full weights, at TP 2
// and 4, with and without sequence parallelism (outputs and gradients all-gathered and compared
// whole); a wrong placement is one Error naming the expected and the given layout; and the
// view form of redistribute() equals the owning form for every pair of placements.
#include <random>

#include <trident/tp/linear.hpp>
#include <trident/tp/vocab_parallel.hpp>

#include "mpi_test.hpp"

using namespace trident;

namespace {
Matrix<double> random_matrix(int rows, int cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  Matrix<double> m(rows, cols);
  for (Eigen::Index k = 0; k < m.size(); ++k) m.data()[k] = normal(gen);
  return m;
}
// The sharded tensor of a global matrix (cols = 0: a vector, the matrix's one row).
ShardedTensor<double> shard(const Matrix<double>& g, const TensorParallel<>& tp, Placement p,
                            std::int64_t padded = 0) {
  return ShardedTensor<double>::from_global(
      g, tp.layout(g.rows() == 1 && p != Placement::Shard(1) ? g.cols() : g.rows(),
                   g.rows() == 1 && p != Placement::Shard(1) ? 0 : g.cols(), p, padded));
}
ShardedTensor<double> zeros_like(const ShardedTensor<double>& t) {
  return ShardedTensor<double>(t.layout());
}
double max_diff(const ShardedTensor<double>& t, const Matrix<double>& ref, const Comm& tp) {
  Matrix<double> full = t.layout().placement().kind == Placement::Kind::partial
                            ? redistribute(t, Placement::Replicate(), tp).local()
                            : all_gather(t, tp);
  return (full.reshaped(ref.rows(), ref.cols()) - ref).cwiseAbs().maxCoeff();
}
}  // namespace

TEST_CASE("ColumnParallelLinear then RowParallelLinear on sharded tensors equal the unsharded") {
  for (int t : {2, 4})
    for (bool sp : {false, true}) {
      auto comm = test::first_ranks(t, test::current_test_name());
      if (!comm) continue;
      INFO("TP=" << t << (sp ? " SP" : ""));
      const TensorParallel tp{&*comm, sp};
      const int N = 8, I = 6, H = 8, O = 5;  // x (N, I) -> (N, H) -> (N, O)
      const Matrix<double> x = random_matrix(N, I, 1), w1 = random_matrix(I, H, 2),
                           b1 = random_matrix(1, H, 3), w2 = random_matrix(H, O, 4),
                           b2 = random_matrix(1, O, 5), dy = random_matrix(N, O, 6);
      Matrix<double> h(N, H), y(N, O), dh(N, H), dx(N, I),
          dw1 = Matrix<double>::Zero(I, H), db1 = Matrix<double>::Zero(1, H),
          dw2 = Matrix<double>::Zero(H, O), db2 = Matrix<double>::Zero(1, O);
      nn::linear_forward(h.data(), x.data(), w1.data(), b1.data(), N, I, H);
      nn::linear_forward(y.data(), h.data(), w2.data(), b2.data(), N, H, O);
      nn::linear_backward(dh.data(), dw2.data(), db2.data(), dy.data(), h.data(), w2.data(), N, H,
                          O);
      nn::linear_backward(dx.data(), dw1.data(), db1.data(), dh.data(), x.data(), w1.data(), N, I,
                          H);

      const ColumnParallelLinear<double> col{I, H / t};
      const RowParallelLinear<double> row{H / t, O};
      const Placement A = tp.activation_placement();
      const auto xs = shard(x, tp, A), w1s = shard(w1, tp, Placement::Shard(1)),
                 b1s = shard(b1, tp, Placement::Shard(0)), w2s = shard(w2, tp, Placement::Shard(0)),
                 b2s = shard(b2, tp, Placement::Replicate()), dys = shard(dy, tp, A);
      const ShardedTensor<double> hs = col.forward(tp, xs, w1s, b1s);
      const ShardedTensor<double> ys = row.forward(tp, hs, w2s, b2s);
      CHECK(hs.layout().placement() == Placement::Shard(1));
      CHECK(ys.layout().placement() == A);
      CHECK(max_diff(hs, h, *comm) <= 1e-12);
      CHECK(max_diff(ys, y, *comm) <= 1e-12);
      auto dw1s = zeros_like(w1s), db1s = zeros_like(b1s), dw2s = zeros_like(w2s);
      ShardedTensor<double> db2s(
          tp.layout(O, 0, sp ? Placement::Partial() : Placement::Replicate()));
      const ShardedTensor<double> dhs = row.backward(tp, dys, hs, w2s, dw2s, db2s);
      const ShardedTensor<double> dxs = col.backward(tp, dhs, xs, w1s, dw1s, db1s);
      CHECK(max_diff(dhs, dh, *comm) <= 1e-12);
      CHECK(max_diff(dxs, dx, *comm) <= 1e-12);
      CHECK(max_diff(dw1s, dw1, *comm) <= 1e-12);
      CHECK(max_diff(db1s, db1, *comm) <= 1e-12);
      CHECK(max_diff(dw2s, dw2, *comm) <= 1e-12);
      CHECK(max_diff(db2s, db2, *comm) <= 1e-12);
    }
}

TEST_CASE("vocab-parallel embedding and cross-entropy on sharded tensors equal the unsharded") {
  for (int t : {2, 4})
    for (bool sp : {false, true}) {
      auto comm = test::first_ranks(t, test::current_test_name());
      if (!comm) continue;
      INFO("TP=" << t << (sp ? " SP" : ""));
      const TensorParallel tp{&*comm, sp};
      const int V = 67, C = 6, seq = 4, B = 2, N = seq * B;  // vocab 67: padded on every TP size
      const std::int64_t Vp = (V + t - 1) / t * t;
      const Matrix<double> wte = random_matrix(V, C, 7), wpe = random_matrix(seq, C, 8),
                           dh = random_matrix(N, C, 9);
      std::vector<std::int32_t> tokens(N), targets(N);
      for (int k = 0; k < N; ++k) {
        tokens[k] = (k * 29 + 3) % V;
        targets[k] = (k * 17 + 66) % V;
      }
      // unsharded: h = wte[tokens] + wpe; losses of softmax(h wte^T); gradients of mean loss
      Matrix<double> h = Matrix<double>::Zero(N, C), logits(N, V), probs(N, V), losses(1, N),
                     dwte = Matrix<double>::Zero(V, C), dwpe = Matrix<double>::Zero(seq, C),
                     dhh(N, C);
      nn::token_embedding_forward(h.data(), tokens.data(), wte.data(), N, C, 0, V);
      nn::position_embedding_forward(h.data(), wpe.data(), N, B, 0, C);
      logits = h * wte.transpose();
      nn::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V, 0,
                                V);
      nn::cross_entropy_backward(probs.data(), probs.data(), targets.data(), 1.0 / N, N, V, 0);
      dwte += probs.transpose() * h;
      dhh = probs * wte;
      Matrix<double> dwte_emb = Matrix<double>::Zero(V, C);
      nn::token_embedding_backward(dwte_emb.data(), dh.data(), tokens.data(), N, C, 0, V);
      nn::position_embedding_backward(dwpe.data(), dh.data(), N, B, 0, C);

      const auto wtes = shard(wte, tp, Placement::Shard(0), Vp);
      const auto wpes = shard(wpe, tp, Placement::Replicate());
      const int rows = int(wtes.layout().local_rows()), begin = int(wtes.layout().offset());
      const VocabParallelEmbedding<double> emb{begin, rows, C};
      const VocabParallelHead<double> head{begin, rows, V, C};
      const ShardedTensor<double> hs = emb.forward(tp, tokens, B, wtes, wpes);
      CHECK(max_diff(hs, h, *comm) <= 1e-12);
      ShardedTensor<double> probs_s;
      const ShardedTensor<double> ls = head.forward(tp, hs, wtes, targets, probs_s);
      CHECK(max_diff(ls, losses, *comm) <= 1e-12);
      auto dwtes = zeros_like(wtes);
      const ShardedTensor<double> dhs =
          head.backward(tp, hs, wtes, targets, probs_s, 1.0 / N, dwtes);
      CHECK(max_diff(dhs, dhh, *comm) <= 1e-12);
      CHECK(max_diff(dwtes, dwte, *comm) <= 1e-12);
      auto dwte_embs = zeros_like(wtes);
      ShardedTensor<double> dwpes(wpes.layout());
      emb.backward(tp, shard(dh, tp, tp.activation_placement()), tokens, B, dwte_embs, dwpes);
      CHECK(max_diff(dwte_embs, dwte_emb, *comm) <= 1e-12);
      if (sp) tp.all_reduce(dwpes.local().data(), dwpes.local().size());  // per sequence shard
      CHECK(max_diff(dwpes, dwpe, *comm) <= 1e-12);
    }
}

TEST_CASE("a wrong placement is one Error naming the expected and the given layout") {
  TRIDENT_RANKS(2, comm);
  const TensorParallel tp{&comm, false}, sp{&comm, true};
  const Matrix<double> x = random_matrix(4, 6, 1), w = random_matrix(6, 8, 2),
                       b = random_matrix(1, 8, 3);
  const ColumnParallelLinear<double> col{6, 4};
  const auto xs = shard(x, tp, Placement::Replicate()), bs = shard(b, tp, Placement::Shard(0));
  CHECK_THROWS_WITH_AS(col.forward(tp, xs, shard(w, tp, Placement::Replicate()), bs),
                       "ColumnParallelLinear w: expected (6, 8) Shard(1) over 2 ranks, given "
                       "(6, 8) Replicate over 2 ranks",
                       Error);
  CHECK_THROWS_WITH_AS(col.forward(sp, xs, shard(w, tp, Placement::Shard(1)), bs),
                       "ColumnParallelLinear x: expected (4, 6) Shard(0) over 2 ranks, given "
                       "(4, 6) Replicate over 2 ranks",
                       Error);
  const RowParallelLinear<double> row{4, 6};
  CHECK_THROWS_WITH_AS(row.forward(tp, shard(w.transpose(), tp, Placement::Shard(1)),
                                   shard(w, tp, Placement::Shard(1)), xs),
                       "RowParallelLinear x: expected (8, 8) Shard(1) over 2 ranks, given "
                       "(8, 6) Shard(1) over 2 ranks",
                       Error);
  const VocabParallelEmbedding<double> emb{0, 34, 6};
  const std::vector<std::int32_t> tokens(4, 1);
  const auto wte = shard(random_matrix(67, 6, 4), tp, Placement::Shard(0), 68);
  ShardedTensor<double> dwte(wte.layout()), dwpe(tp.layout(4, 6, Placement::Shard(0)));
  CHECK_THROWS_WITH_AS(emb.backward(tp, xs, tokens, 1, dwte, dwpe),
                       "VocabParallelEmbedding dwpe: expected (4, 6) Replicate over 2 ranks, "
                       "given (4, 6) Shard(0) over 2 ranks",
                       Error);
  const VocabParallelHead<double> head{0, 34, 67, 6};
  ShardedTensor<double> probs;
  const std::vector<std::int32_t> targets(4, 1);
  const auto unpadded = shard(random_matrix(67, 6, 4), tp, Placement::Shard(0));
  CHECK_THROWS_WITH_AS(head.forward(tp, xs, unpadded, targets, probs),
                       "VocabParallelHead wte: expected (67, 6) Shard(0) padded to 68 over 2 "
                       "ranks, given (67, 6) Shard(0) over 2 ranks",
                       Error);
}

TEST_CASE("redistribute into a view equals the owning redistribute, for every pair") {
  for (int t : {2, 4}) {
    auto comm = test::first_ranks(t, test::current_test_name());
    if (!comm) continue;
    const TensorParallel tp{&*comm, false};
    const Matrix<double> g = random_matrix(8, 12, 11);
    const std::vector<Placement> ps = {Placement::Replicate(), Placement::Shard(0),
                                       Placement::Shard(1), Placement::Shard(1, 3),
                                       Placement::Partial()};
    for (const Placement& p : ps)
      for (const Placement& q : ps) {
        if (q.kind == Placement::Kind::partial && p != q) continue;  // nothing turns into Partial
        INFO("TP=" << t << " " << p.to_string() << " -> " << q.to_string());
        // Partial: rank r holds g * (r + 1) / sum, so the sum is g
        ShardedTensor<double> from =
            shard(g, tp, p.kind == Placement::Kind::partial ? Placement::Replicate() : p);
        if (p.kind == Placement::Kind::partial) {
          from = ShardedTensor<double>(tp.layout(8, 12, p));
          from.local() = g * double(comm->rank() + 1) / double(t * (t + 1) / 2);
        }
        ShardedTensor<double> into(tp.layout(8, 12, q));
        redistribute<double>(from, into, *comm);
        const ShardedTensor<double> owning = redistribute(from, q, *comm);
        CHECK((into.local() - owning.local()).cwiseAbs().maxCoeff() <= 1e-12);
      }
  }
}
