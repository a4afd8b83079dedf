// trident/testing/parity_main.hpp: the parity kit as a program — a host app's main() in one line:
//
//   #define TRIDENT_CLI_IMPLEMENTATION  // in exactly one translation unit (io/cli.hpp)
//   #include <trident/testing/parity_main.hpp>
//   int main(int argc, char** argv) {
//     return trident::testing::parity_main(argc, argv, MyModel(config), my_tokens, base_run);
//   }
//
//   mpiexec -n 8 ./my_parity [--steps 3] [--tolerance 1e-10] [--case NAME ...] [--gradients]
//                            [--list]
//
// Runs every case the world allows (testing/parity_cases.hpp) or the named ones against one
// process, prints the table on rank 0 and exits 0 on parity, 1 otherwise (and 1, with the
// message, for bad flags). --gradients adds the finite-difference checks (gradcheck_parts.hpp).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "../core/environment.hpp"
#include "../io/cli.hpp"
#include "gradcheck_parts.hpp"
#include "parity.hpp"

namespace trident::testing {

template <class M>
int parity_main(int argc, char** argv, const M& model, const TokenSource& data,
                const TrainOptions& base = {}) {
  return run_main(argc, argv, [&](int argc, char** argv) {
    const Comm world = Comm::world();
    int steps = 3;
    double tolerance = 1e-10;
    std::vector<std::string> names;
    bool gradients = false, list = false;
    cli::App app("the parity kit: this model on every mesh against one process, in double");
    app.add_option("--steps", steps, "optimizer steps per case")->check(cli::PositiveNumber);
    app.add_option("--tolerance", tolerance, "relative tolerance")->check(cli::PositiveNumber);
    app.add_option("--case", names, "a case to run (repeatable; default: every case)");
    app.add_flag("--gradients", gradients, "also check gradients against finite differences");
    app.add_flag("--list", list, "print the cases this world allows and exit");
    parse_command_line(app, argc, argv, world);
    std::vector<ParityCase> cases = default_cases(model, base, world.size());
    if (list) {
      if (world.rank() == 0)
        for (const ParityCase& c : cases) std::printf("%s\n", c.name.c_str());
      return 0;
    }
    if (!names.empty()) {
      std::vector<ParityCase> chosen;
      for (const std::string& n : names) {
        bool found = false;
        for (const ParityCase& c : cases)
          if (c.name == n) {
            chosen.push_back(c);
            found = true;
          }
        require(found, "--case '" + n + "': no such case at " + std::to_string(world.size()) +
                           " ranks (--list prints them)");
      }
      cases = chosen;
    }
    const ParityReport r = check_parity(world, model, data, base, cases, steps, tolerance);
    if (world.rank() == 0) std::printf("%s", r.text().c_str());
    bool ok = r.ok();
    if (gradients) {
      const GradientReport g = check_gradients(world, model, data, base);
      if (world.rank() == 0) std::printf("\n%s", g.text().c_str());
      ok = ok && g.ok();
    }
    return ok ? 0 : 1;
  });
}

}  // namespace trident::testing
