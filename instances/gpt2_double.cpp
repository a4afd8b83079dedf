// instances/gpt2_double.cpp: GPT-2's trainer in double, compiled once for trident's programs
// (the declaration: models/gpt2/trainer.hpp, docs/ARCHITECTURE.md §9).
#include <trident/models/gpt2/trainer.hpp>

template class trident::Trainer<trident::gpt2::Model, double, double>;
