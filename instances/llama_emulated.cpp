// instances/llama_emulated.cpp: Llama's trainers and their run report on the emulated device
// (backend::Emulated), compiled once for trident's programs, apart from the CPU's
// (instances/llama.cpp) so that the two units build in parallel (docs/BUILD.md).
#include <trident/io/checkpoint.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/llama/llama.hpp>
#include <trident/train/evaluate.hpp>
#include <trident/train/report.hpp>
#include <trident/train/sample.hpp>

TRIDENT_LLAMA_INSTANCES(template, trident::backend::Emulated);
