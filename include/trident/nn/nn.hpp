// trident/nn/nn.hpp: the single-device math of GPT-2 and Llama-style decoders, forward and
// backward.
//
// Kernels over raw pointers with explicit sizes (llm.c style), templated on the scalar. Rows are
// tokens in [s, b] order. Parameter gradients accumulate (+=), input gradients are overwritten.
// No MPI here: the tensor-parallel layers of tp/ compose these with their communication.
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
