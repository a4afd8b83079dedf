// instances/gpt2_float.cpp: GPT-2's trainer in float, the tools run on it, and measure_run on
// it, compiled once for trident's programs (the declarations: models/gpt2/trainer.hpp,
// costmodel/measured.hpp, docs/ARCHITECTURE.md §9).
#include <trident/costmodel/measured.hpp>
#include <trident/io/checkpoint.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/gpt2/trainer.hpp>
#include <trident/train/evaluate.hpp>
#include <trident/train/report.hpp>
#include <trident/train/sample.hpp>

TRIDENT_GPT2_INSTANCES(template, float, float);

template trident::costmodel::MeasuredRun trident::costmodel::measure_run<float, float>(
    const trident::Comm&, const trident::gpt2::Options&, const trident::TokenSource&, int, int);
