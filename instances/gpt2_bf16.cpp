// instances/gpt2_bf16.cpp: GPT-2's trainer in bf16 mixed precision (float compute, bf16
// storage), compiled once for trident's programs (the declaration: models/gpt2/trainer.hpp,
// docs/ARCHITECTURE.md §9).
#include <trident/models/gpt2/trainer.hpp>

template class trident::Trainer<trident::gpt2::Model, float, trident::bf16>;
