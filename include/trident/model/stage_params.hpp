// trident/model/stage_params.hpp: a stage's parameters in the order it uses them — a small
// handle over its ZeRO UnitStore (zero/unit_store.hpp) for the stage's forward and backward.
//
// The use order lists a store unit once per read (a unit read twice, e.g. a tied embedding that
// also serves as the LM head in the same stage, appears twice). Positions k index that list:
// use() reads the parameters of positions [k, k + n) and starts gathering the next position's
// unit (ZeRO-3 prefetch); use_backward() the same walking backwards, without prefetching the
// first `no_backward_reads` positions (an embedding's backward reads no parameters);
// release() after computing; grads() the buffers a backward accumulates into;
// launch_gradient_reduction() when a position's backward is done — a unit's DP reduction is
// launched at its earliest position (the last that the backward reaches), once all its
// gradient is in.
#pragma once

#include <vector>

#include "../zero/unit_store.hpp"

namespace trident {

template <class T, class S = T, class B = backend::Cpu>
class StageParams {
 public:
  StageParams(UnitStore<T, S, B>& store, std::vector<int> order, std::size_t no_backward_reads)
      : store_(store), order_(std::move(order)), skip_(no_backward_reads) {}

  std::size_t uses() const { return order_.size(); }
  int unit(std::size_t k) const { return order_[k]; }

  std::vector<const T*> use(std::size_t k, std::size_t n) {
    std::vector<const T*> w(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (k + i + 1 < order_.size()) store_.prefetch_parameters(order_[k + i + 1]);
      w[i] = store_.gather_parameters(order_[k + i]);
    }
    return w;
  }
  std::vector<const T*> use_backward(std::size_t k, std::size_t n) {
    std::vector<const T*> w(n);
    for (std::size_t i = n; i-- > 0;) {
      if (k + i > skip_) store_.prefetch_parameters(order_[k + i - 1]);
      w[i] = store_.gather_parameters(order_[k + i]);
    }
    return w;
  }
  void release(std::size_t k, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) store_.release_parameters(order_[k + i]);
  }
  std::vector<T*> grads(std::size_t k, std::size_t n) {
    std::vector<T*> g(n);
    for (std::size_t i = 0; i < n; ++i) g[i] = store_.grads(order_[k + i]);
    return g;
  }
  void launch_gradient_reduction(std::size_t k, std::size_t n, bool last) {
    for (std::size_t i = 0; i < n; ++i)
      if (earliest(k + i)) store_.launch_gradient_reduction(order_[k + i], last);
  }

 private:
  bool earliest(std::size_t k) const {
    for (std::size_t j = 0; j < k; ++j)
      if (order_[j] == order_[k]) return false;
    return true;
  }

  UnitStore<T, S, B>& store_;
  std::vector<int> order_;
  std::size_t skip_;
};

}  // namespace trident
