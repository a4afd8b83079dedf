// trident/plan/plan.hpp: the cost model and the parallelism planner, in one include.
//
// "With ZeRO, why do we still need 3D parallelism?" The cost model predicts, for a GPT model
// on a cluster, the memory per GPU (ZeRO's model states, Korthikanti's activations), the bytes
// each parallel axis moves, the pipeline bubble and the step time; the planner ranks every
// valid TP x PP x DP x ZeRO configuration by it. Pure ZeRO-3 fits huge models but moves
// whole layers over the slow links between nodes for every microbatch; tensor parallelism
// keeps its all-reduces on the fast links inside a node, and pipeline parallelism crosses
// nodes with only an activation per microbatch. No MPI: plain arithmetic on specs.
#pragma once

#include "cluster.hpp"
#include "communication.hpp"
#include "compute.hpp"
#include "config.hpp"
#include "estimate.hpp"
#include "formulas.hpp"
#include "memory.hpp"
#include "model_spec.hpp"
#include "planner.hpp"
