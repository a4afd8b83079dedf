// instances/llama.cpp: Llama's trainers in float, double and float/bf16 and their run report,
// compiled once for trident's programs (the declarations: models/llama/llama.hpp,
// docs/ARCHITECTURE.md §9).
#include <trident/models/llama/llama.hpp>
#include <trident/train/report.hpp>

TRIDENT_TRAINER_INSTANCES(template, trident::llama::Model, float, float);
TRIDENT_TRAINER_INSTANCES(template, trident::llama::Model, double, double);
TRIDENT_TRAINER_INSTANCES(template, trident::llama::Model, float, trident::bf16);
