// instances/gpt2_float.cpp: GPT-2's trainer in float, and measure_run on it, compiled once for
// trident's programs (the declarations: models/gpt2/trainer.hpp, docs/ARCHITECTURE.md §9).
#include <trident/costmodel/measured.hpp>
#include <trident/models/gpt2/trainer.hpp>

template class trident::Trainer<trident::gpt2::Model, float, float>;

template trident::costmodel::MeasuredRun trident::costmodel::measure_run<float, float>(
    const trident::Comm&, const trident::gpt2::Options&, const trident::TokenSource&, int, int);
