// instances/gpt2_emulated.cpp: GPT-2's trainers and tools on the emulated device
// (backend::Emulated: the CPU behind guarded memory), in float, double and bf16 mixed precision,
// compiled once for trident's programs, apart from the CPU's (instances/gpt2.cpp) so that the
// two units build in parallel (docs/BUILD.md).
#include <trident/io/checkpoint.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/gpt2/trainer.hpp>
#include <trident/train/evaluate.hpp>
#include <trident/train/report.hpp>
#include <trident/train/sample.hpp>

TRIDENT_GPT2_BACKEND_INSTANCES(template, trident::backend::Emulated);
