// trident/nn/nn.hpp: the single-device math of GPT-2 and Llama-style decoders, forward and
// backward.
//
// Layers over raw pointers with explicit sizes (llm.c style), templated on the backend Bk
// (backend::Cpu by default) and the scalar: each layer's math is one set of kernel bodies
// (backend/host_device.hpp) that Bk launches, an OpenMP SIMD loop on the CPU, a CUDA kernel on a
// GPU; every pointer is in Bk's memory. Rows are tokens in [s, b] order. Parameter gradients
// accumulate (+=), input gradients are overwritten. No communication here: the tensor-parallel
// layers of tp/ compose these with their collectives.
#pragma once

#include "attention.hpp"
#include "cross_entropy.hpp"
#include "embedding.hpp"
#include "gelu.hpp"
#include "layernorm.hpp"
#include "linear.hpp"
#include "residual.hpp"
#include "rmsnorm.hpp"
#include "rope.hpp"
#include "swiglu.hpp"
