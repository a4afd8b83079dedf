// tests/static_check_fixture.cpp: a model without describe(), given to the Trainer. Built only by
// the test model.static_checks (tests/first_error.cmake), which expects the build to fail with
// model/model.hpp's sentence as the compiler's first error.
#include <trident/models/llama/model.hpp>
#include <trident/train/trainer.hpp>

struct NoDescribe : trident::llama::Model {
  using trident::llama::Model::Model;
  void describe() const {}  // mistyped: a ModelDescription is required
};

int main() {
  const trident::Comm world = trident::Comm::world();
  trident::Trainer<NoDescribe, float> t(world, NoDescribe(), trident::TrainOptions{},
                                        trident::TokenSource::synthetic(256));
  return 0;
}
