// compare_losses A.json B.json TOLERANCE: passes (exit 0) when two train_gpt run reports have
// the same number of steps and every step's loss agrees within TOLERANCE, relative.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: compare_losses A.json B.json TOLERANCE\n");
    return 2;
  }
  nlohmann::json a, b;
  std::ifstream(argv[1]) >> a;
  std::ifstream(argv[2]) >> b;
  const double tolerance = std::atof(argv[3]);
  const auto &la = a.at("losses"), &lb = b.at("losses");
  // a resumed run (first_step > 0) is compared on the steps it ran; both runs end at one step
  const std::size_t fa = a.value("first_step", 0), fb = b.value("first_step", 0);
  if (lb.empty() || fb < fa || fa + la.size() != fb + lb.size()) {
    std::fprintf(stderr, "different steps: %zu..%zu and %zu..%zu\n", fa, fa + la.size(), fb,
                 fb + lb.size());
    return 1;
  }
  int bad = 0;
  for (std::size_t i = 0; i < lb.size(); ++i) {
    const double x = la[fb - fa + i], y = lb[i], rel = std::abs(x - y) / std::abs(x);
    std::printf("step %zu: %.15f %.15f  relative difference %.2e\n", fb + i, x, y, rel);
    bad += rel > tolerance;
  }
  return bad ? 1 : 0;
}
