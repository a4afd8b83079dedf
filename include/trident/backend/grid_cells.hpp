// trident/backend/grid_cells.hpp: grid(rows, cols, body) as one flat launch, for a backend that
// runs one thread per element (cuda/launch.cuh).
//
// Element k of the (rows, cols) matrix is body(k / cols, k % cols). k is an Index: rows * cols
// may pass 2^31 (a (B*T, F) activation of a large batch) while each of rows and cols stays an
// int. Host code as well, so that the arithmetic is tested without a GPU (tests/test_sizes.cpp).
#pragma once

#include "host_device.hpp"

namespace trident::backend {

template <class Body>
struct GridCells {
  Body body;
  int cols;
  TRIDENT_HOST_DEVICE void operator()(Index k) const { body(int(k / cols), int(k % cols)); }
};

}  // namespace trident::backend
