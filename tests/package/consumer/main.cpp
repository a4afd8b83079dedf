// tests/package/consumer: a program outside trident that uses it as a CMake package.
//
// Builds a Mesh<> (all ranks data-parallel), sums rank + 1 over the DP group and checks the
// result, n(n+1)/2, on every rank; multiplies two small matrices through backend::gemm (the BLAS
// trident was built with, reached through trident::trident's link and compile definition) and
// checks the product. Each rank prints its mesh and the verdicts; exit status 1 when one is wrong.
#include <cstdio>
#include <trident/trident.hpp>
#include <vector>

int main(int argc, char** argv) {
  return trident::run_main(argc, argv, [](int, char**) {
    const trident::Comm world = trident::Comm::world();
    const trident::Mesh<> mesh(world, trident::MeshShape{1, 1, world.size()});
    const int n = mesh.dp().size();
    std::vector<double> x(16, mesh.rank() + 1.0);
    mesh.dp().all_reduce<double>(x);
    const double expected = n * (n + 1) / 2.0;
    bool ok = true;
    for (double v : x) ok = ok && v == expected;
    std::printf("%s: all_reduce %s (got %g, expected %g)\n", mesh.to_string().c_str(),
                ok ? "ok" : "WRONG", x[0], expected);
    // (2, 3) [1 2 3; 4 5 6] times (3, 2) [1 0; 0 1; 1 1] = [4 5; 10 11]
    const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1, 1, 1};
    double c[4] = {};
    namespace be = trident::backend;
    be::gemm<double>(be::view(c, 2, 2), be::cview(a, 2, 3), be::cview(b, 3, 2), false, false, 0);
    const bool gemm_ok = c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11;
    std::printf("%s: gemm through %s %s\n", mesh.to_string().c_str(), be::blas::kName,
                gemm_ok ? "ok" : "WRONG");
    return ok && gemm_ok ? 0 : 1;
  });
}
