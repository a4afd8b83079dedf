// tensor/: ShardLayout index arithmetic (chunks, padding, uneven splits) and redistribution
// between placements, against the global tensor every rank can build.
#include <trident/tensor/redistribute.hpp>

#include "mpi_test.hpp"

using namespace trident;

namespace {
Matrix<double> global_matrix(std::int64_t rows, std::int64_t cols) {
  Matrix<double> m(rows, cols);
  for (std::int64_t k = 0; k < m.size(); ++k) m.data()[k] = 1.0 + k;
  return m;
}
}  // namespace

TEST_CASE("fused QKV as Shard(1, chunks=3): each rank holds its heads' columns of Q, K and V") {
  // [C=4, 3C=12] over 2 ranks: rank 1 holds columns 2,3 (Q) 6,7 (K) 10,11 (V)
  const ShardLayout l({4, 12}, Placement::Shard(1, 3), 2, 1);
  CHECK(l.local_rows() == 4);
  CHECK(l.local_cols() == 6);
  const std::vector<std::int64_t> expect{2, 3, 6, 7, 10, 11};
  for (int j = 0; j < 6; ++j) CHECK(l.global_index(1, j) == expect[j]);
  CHECK(l.global_offset(1, 0, 1) == 12 + 2);
}

TEST_CASE("vocab padded to a multiple of the ranks: padding rows are zero and marked") {
  // V = 67 rows over 4 ranks padded to 68: rank 3 holds rows 51..67, row 67 is padding
  const ShardLayout l({67, 3}, Placement::Shard(0), 4, 3, /*padded=*/68);
  CHECK(l.local_rows() == 17);
  CHECK(l.offset() == 51);
  CHECK(l.global_offset(16, 0, 3) == -1);
  const auto t = ShardedTensor<double>::from_global(global_matrix(67, 3), l);
  CHECK(t.local()(15, 2) == 1.0 + 66 * 3 + 2);
  CHECK(t.local()(16, 0) == 0.0);
}

TEST_CASE("an uneven split without padding: 10 elements over 4 ranks are 3,3,2,2") {
  for (int r = 0; r < 4; ++r) {
    const ShardLayout l({10}, Placement::Shard(0), 4, r);
    CHECK(l.local_numel() == (r < 2 ? 3 : 2));
    CHECK(l.offset() == std::vector<int>{0, 3, 6, 8}[r]);
  }
}

TEST_CASE("redistribute: Shard -> Replicate -> Shard and Partial -> Shard/Replicate") {
  TRIDENT_RANKS(2, comm);
  const int n = comm.size(), r = comm.rank();
  const Matrix<double> g = global_matrix(7, 9);
  for (Placement p : {Placement::Shard(0), Placement::Shard(1), Placement::Shard(1, 3)}) {
    const auto shard = ShardedTensor<double>::from_global(g, ShardLayout({7, 9}, p, n, r));
    CHECK(all_gather(shard, comm) == g);
    const auto back = redistribute(shard, Placement::Replicate(), comm);
    CHECK(back.local() == g);
    const auto again = redistribute(back, p, comm);
    CHECK(again.local() == shard.local());
  }
  // Partial: rank r holds (r+1) * g; the sum is n(n+1)/2 * g
  ShardedTensor<double> partial(ShardLayout({7, 9}, Placement::Partial(), n, r));
  partial.local() = (r + 1.0) * g;
  const double factor = n * (n + 1) / 2.0;
  CHECK(redistribute(partial, Placement::Replicate(), comm).local() == factor * g);
  const auto rs = redistribute(partial, Placement::Shard(0), comm, /*padded=*/8);
  const auto expect = ShardedTensor<double>::from_global(
      Matrix<double>(factor * g), ShardLayout({7, 9}, Placement::Shard(0), n, r, 8));
  CHECK(rs.local() == expect.local());
}

TEST_CASE("gathering a padded vocab shard over 4 ranks drops the padding") {
  TRIDENT_RANKS(4, comm);
  const Matrix<double> g = global_matrix(67, 2);
  const ShardLayout l({67, 2}, Placement::Shard(0), comm.size(), comm.rank(), 68);
  CHECK(all_gather(ShardedTensor<double>::from_global(g, l), comm) == g);
}
