// tests/guide_defects.cpp: the guide's token-shift MLP (docs/write_a_model.md) with one defect
// planted in its Block, chosen by GUIDE_DEFECT, to show that the parity kit and the stage contract
// catch what they claim to (tests/guide.cmake):
//   reads-w-in-w   Block::backward reads w[0] in the W pass (where the contract gives w == null)
//   tp-rank-grad   the mix's gradient scaled by 1 + the TP rank: replicas drift apart under TP
//   dx-scale       the input gradient 1% too large: every mesh agrees, finite differences do not
#define TRIDENT_CLI_IMPLEMENTATION
#include <trident/testing/parity_main.hpp>

#include <cstdlib>
#include <string>

#include "token_shift.hpp"

namespace defect {

inline std::string which() {
  const char* e = std::getenv("GUIDE_DEFECT");
  return e ? e : "";
}

template <class T, class B>
class Block : public shift::Block<T, B> {
  using Base = shift::Block<T, B>;

 public:
  Block(const shift::Config& c, const trident::TensorParallel<B>& tp, int rows)
      : Base(c, tp, rows), tp_rank_(tp.rank()), C_(c.hidden), n_(Base::activation_size()) {}
  void backward(const typename Base::Activations& a, T* dx, const T* dout, const T* w, T* g,
                typename Base::Gradients& d, trident::nn::BackwardPart part,
                trident::nn::BlockHalves halves) const {
    const std::string bug = which();
    if (bug == "reads-w-in-w" && part == trident::nn::BackwardPart::weight) {
      volatile T first = w[0];  // the defect: W has no parameters
      (void)first;
    }
    Base::backward(a, dx, dout, w, g, d, part, halves);
    if (!trident::nn::computes_input(part)) return;
    if (bug == "tp-rank-grad")
      for (int c = 0; c < C_; ++c) g[c] *= T(1 + tp_rank_);  // the mix's gradient
    if (bug == "dx-scale")
      for (std::size_t k = 0; k < n_; ++k) dx[k] *= T(1.01);
  }

 private:
  int tp_rank_, C_;
  std::size_t n_;
};

// The guide's model with that Block; everything else delegated to shift::Model.
class Model : public trident::DecoderModel<Model, shift::Config, trident::llama::Embedding, Block,
                                           trident::llama::Head> {
 public:
  using DecoderModel::DecoderModel;
  static constexpr const char* kName = "token-shift MLP";
  double initial_value(const trident::ParamSpec& p, std::uint64_t i) const {
    return shift::Model(c_).initial_value(p, i);
  }
  std::vector<trident::Tie> ties(int v) const { return shift::Model(c_).ties(v); }
  trident::pp::StageCosts stage_costs() const { return shift::Model(c_).stage_costs(); }
  void validate(const trident::ModelRun& run) const { shift::Model(c_).validate(run); }
  trident::ModelDescription describe() const { return shift::Model(c_).describe(); }
};

}  // namespace defect

int main(int argc, char** argv) {
  trident::TrainOptions base;
  base.batch = 8;
  base.optimizer.lr = 1e-2;
  return trident::testing::parity_main(argc, argv, defect::Model(shift::small()),
                                       trident::TokenSource::synthetic(61), base);
}
