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

#include <trident/nn/attention.hpp>
#include <trident/nn/cross_entropy.hpp>
#include <trident/nn/embedding.hpp>
#include <trident/nn/gelu.hpp>
#include <trident/nn/layernorm.hpp>
#include <trident/nn/linear.hpp>
#include <trident/nn/residual.hpp>
#include <trident/nn/rmsnorm.hpp>
#include <trident/nn/rope.hpp>
#include <trident/nn/swiglu.hpp>
