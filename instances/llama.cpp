// instances/llama.cpp: Llama's trainers on the CPU in float, double and float/bf16, their run
// report and the tools run on them, compiled once for trident's programs (the declarations:
// models/llama/llama.hpp, docs/BUILD.md).
#include <trident/io/checkpoint.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/llama/llama.hpp>
#include <trident/train/evaluate.hpp>
#include <trident/train/report.hpp>
#include <trident/train/sample.hpp>

TRIDENT_LLAMA_INSTANCES(template, trident::backend::Cpu);
