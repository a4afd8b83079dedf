// instances/gpt2.cpp: GPT-2's trainers on the CPU in float, double and bf16 mixed precision
// (float compute, bf16 storage), the tools run on them, and measure_run in float and bf16, compiled
// once for trident's programs (the declarations: models/gpt2/trainer.hpp, costmodel/measured.hpp).
// One translation unit for the three: they share most of their code (float and bf16 compute
// alike; the I/O is the same), which one unit compiles once: 46 s against 3 x 32 s apart
// (docs/BUILD.md).
#include <trident/costmodel/measured.hpp>
#include <trident/io/checkpoint.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/gpt2/trainer.hpp>
#include <trident/train/evaluate.hpp>
#include <trident/train/report.hpp>
#include <trident/train/sample.hpp>

TRIDENT_GPT2_BACKEND_INSTANCES(template, trident::backend::Cpu);

template trident::costmodel::MeasuredRun trident::costmodel::measure_run<float, float>(
    const trident::Comm&, const trident::gpt2::Options&, const trident::TokenSource&, int, int);
template trident::costmodel::MeasuredRun trident::costmodel::measure_run<float, trident::bf16>(
    const trident::Comm&, const trident::gpt2::Options&, const trident::TokenSource&, int, int);
template trident::costmodel::MeasuredRun trident::costmodel::measure_steps<float, float>(
    const trident::Comm&, trident::gpt2::Trainer<float, float>&, int);
