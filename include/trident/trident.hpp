// trident/trident.hpp: the umbrella header. Includes the public modules, whose only
// dependencies are MPI and Eigen (and OpenMP when enabled). Headers under trident/io/ need
// CLI11 or nlohmann-json and are included separately.
#pragma once

#include "core/comm.hpp"
#include "core/environment.hpp"
#include "core/threads.hpp"
#include "mesh/mesh.hpp"
#include "mesh/topology.hpp"
