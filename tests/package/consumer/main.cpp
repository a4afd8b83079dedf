// tests/package/consumer: a program outside trident that uses it as a CMake package.
//
// Builds a Mesh<> (all ranks data-parallel), sums rank + 1 over the DP group and checks the
// result, n(n+1)/2, on every rank. Each rank prints its mesh and the verdict; exit status 1 when
// the sum is wrong.
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
    return ok ? 0 : 1;
  });
}
