// trident/trident.hpp: the umbrella header — every public module, bottom to top. Their only
// dependencies are MPI and Eigen (and OpenMP when enabled). Headers under trident/io/ need
// CLI11 or nlohmann-json and are included one by one.
#pragma once

// clang-format off
#include "core/comm.hpp"
#include "core/environment.hpp"
#include "core/memory.hpp"
#include "backend/cpu/threads.hpp"
#include "backend/emulated/emulated.hpp"
#include "mesh/mesh.hpp"
#include "mesh/device_mesh.hpp"
#include "mesh/topology.hpp"
#include "tensor/redistribute.hpp"
#include "nn/nn.hpp"
#include "tp/linear.hpp"
#include "tp/vocab_parallel.hpp"
#include "pp/executor.hpp"
#include "pp/simulate.hpp"
#include "pp/svg.hpp"
#include "zero/optimizer.hpp"
#include "model/decoder_stage.hpp"
#include "models/gpt2/gpt2.hpp"
#include "train/evaluate.hpp"
#include "train/report.hpp"
#include "train/sample.hpp"
#include "plan/plan.hpp"
// clang-format on
