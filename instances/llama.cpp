// instances/llama.cpp: Llama's trainers on the CPU in float, double and float/bf16 and their run
// report, compiled once for trident's programs (the declarations: models/llama/llama.hpp,
// docs/ARCHITECTURE.md §9).
#include <trident/models/llama/llama.hpp>
#include <trident/train/report.hpp>

TRIDENT_LLAMA_INSTANCES(template, trident::backend::Cpu);
