// Sizes past 2^31 elements: the launches and the kernel bodies' index arithmetic at the far end
// of tensors larger than an int can count (a flat gradient of a 2B+ parameter model, logits of
// ~42 sequences of 1024 tokens at GPT-2's vocabulary, a large batch's SwiGLU activation),
// without allocating them: the buffers are address space reserved with MAP_NORESERVE, and the
// backend below runs only each launch's first and last index, so only the pages those touch
// get memory. Each check would fail if an index or a count were cut to 32 bits on the way.
#include <sys/mman.h>

#include <trident/backend/grid_cells.hpp>
#include <trident/backend/ops.hpp>
#include <trident/nn/cross_entropy.hpp>
#include <trident/nn/gelu.hpp>
#include <trident/nn/swiglu.hpp>
#include <trident/optim/adamw.hpp>

#include <cmath>
#include <cstdint>

#include "mpi_test.hpp"

using namespace trident;
using backend::Index;

namespace {
constexpr Index kPast = (Index(1) << 31) + 3;  // elements: past INT_MAX

// The CPU backend, except that a launch runs its first and last index only (and records its
// size): the kernel bodies are the real ones.
struct EndsOnly : backend::Cpu {
  static inline Index launched = 0;
  template <class Body>
  static void for_each(int n, const Body& body) {
    launched = n;
    body(0), body(n - 1);
  }
  template <class Body>
  static void elementwise(Index n, const Body& body) {
    launched = n;
    body(Index(0)), body(n - 1);
  }
  template <class Body>
  static void grid(int rows, int cols, const Body& body) {  // as the CUDA backend launches it
    const backend::GridCells<Body> cells{body, cols};
    launched = Index(rows) * cols;
    cells(0), cells(launched - 1);
  }
};

// n elements of T as reserved address space: pages get memory only where written.
template <class T>
class Reserved {
 public:
  explicit Reserved(Index n) : bytes_(std::size_t(n) * sizeof(T)) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE_MESSAGE(p != MAP_FAILED, "mmap of " << bytes_ << " bytes (MAP_NORESERVE) refused");
    data_ = static_cast<T*>(p);
  }
  ~Reserved() { munmap(data_, bytes_); }
  Reserved(const Reserved&) = delete;
  Reserved& operator=(const Reserved&) = delete;
  T* data() { return data_; }
  T& operator[](Index i) { return data_[i]; }

 private:
  std::size_t bytes_;
  T* data_ = nullptr;
};
}  // namespace

TEST_CASE("grid cells: element k of a (rows, cols) matrix past 2^31 is (k / cols, k % cols)") {
  struct Cell {
    int* row;
    int* col;
    void operator()(int i, int j) const {
      *row = i;
      *col = j;
    }
  };
  const int rows = 300000, cols = 8192;  // 2.46e9 cells
  int i = -1, j = -1;
  const backend::GridCells<Cell> cells{{&i, &j}, cols};
  cells(Index(rows) * cols - 1);
  CHECK(i == rows - 1);
  CHECK(j == cols - 1);
  const Index k = (Index(1) << 31) + 12345;
  cells(k);
  CHECK(i == int(k / cols));
  CHECK(j == int(k % cols));
}

TEST_CASE("Cpu::elementwise runs all of a launch past 2^31 (the last index is reached)") {
  struct Last {
    Index* hit;
    Index last;
    void operator()(Index i) const {
      if (i == last) *hit = i;
    }
  };
  Index hit = -1;
  backend::Cpu::elementwise(kPast, Last{&hit, kPast - 1});
  CHECK(hit == kPast - 1);
}

TEST_CASE("flat-buffer kernels past 2^31: accumulate, bf16 conversion, AdamW, GELU") {
  Reserved<float> a(kPast), b(kPast), m(kPast), v(kPast);
  a[kPast - 1] = 1.0f;
  b[kPast - 1] = 2.0f;
  backend::accumulate<EndsOnly>(a.data(), b.data(), std::size_t(kPast));
  CHECK(EndsOnly::launched == kPast);
  CHECK(a[kPast - 1] == 3.0f);

  Reserved<bf16> h(kPast);
  backend::convert<EndsOnly>(h.data(), a.data(), std::size_t(kPast));
  CHECK(EndsOnly::launched == kPast);
  CHECK(float(h[kPast - 1]) == 3.0f);

  // One AdamW step from zero moments moves the parameter by lr * g / (|g| + eps) = lr.
  AdamW opt;
  opt.weight_decay = 0;
  opt.update<EndsOnly>(a.data(), b.data(), m.data(), v.data(), std::size_t(kPast), 1, 0.5, false,
                       1.0);
  CHECK(EndsOnly::launched == kPast);
  CHECK(a[kPast - 1] == doctest::Approx(2.5).epsilon(1e-6));
  CHECK(m[kPast - 1] == doctest::Approx(0.2).epsilon(1e-6));  // (1 - beta1) g

  nn::gelu_forward<EndsOnly>(b.data(), a.data(), std::size_t(kPast));
  CHECK(EndsOnly::launched == kPast);
  const double x = 2.5;
  const double gelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  CHECK(b[kPast - 1] == doctest::Approx(gelu).epsilon(1e-6));
}

TEST_CASE("row kernels past 2^31: cross-entropy over (N, V) logits, N * V > 2^31") {
  const int N = 43000, V = 50304;  // 2.16e9 logits: GPT-2's vocabulary, 42 sequences of 1024
  REQUIRE(Index(N) * V > kPast);
  Reserved<float> logits(Index(N) * V);
  float* last = logits.data() + (Index(N) - 1) * V;
  const int target = V - 7;
  last[target] = 1.0f;  // the rest of the row is 0
  std::vector<std::int32_t> targets(N, 0);
  targets[N - 1] = target;
  std::vector<float> losses(N, -1.0f);
  nn::cross_entropy_forward<EndsOnly>(losses.data(), logits.data(), logits.data(), targets.data(),
                                      N, V, 0, V);
  CHECK(EndsOnly::launched == N);
  // loss = log(sum_v exp(l_v - max)) + max - l_target = log(1 + (V - 1) / e)
  CHECK(losses[N - 1] == doctest::Approx(std::log(1 + (V - 1) / std::exp(1.0))).epsilon(1e-5));
  const double p_target = 1 / (1 + (V - 1) / std::exp(1.0));
  CHECK(last[target] == doctest::Approx(p_target).epsilon(1e-5));  // probs in place of logits
  nn::cross_entropy_backward<EndsOnly>(logits.data(), logits.data(), targets.data(), 1.0f, N, V, 0);
  CHECK(last[target] == doctest::Approx(p_target - 1).epsilon(1e-5));
}

TEST_CASE("grid kernels past 2^31: SwiGLU over (N, F), N * F > 2^31") {
  const int N = 300000, F = 8192;
  Reserved<float> a(Index(N) * F), b(Index(N) * F), out(Index(N) * F);
  const Index last = Index(N) * F - 1;
  a[last] = 1.0f;
  b[last] = 2.0f;
  nn::swiglu_forward<EndsOnly>(out.data(), a.data(), b.data(), N, F, F);
  CHECK(EndsOnly::launched == Index(N) * F);
  CHECK(out[last] == doctest::Approx(2.0 / (1 + std::exp(-1.0))).epsilon(1e-6));  // SiLU(1) * 2
}
