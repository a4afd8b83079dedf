// instances/gpt2_double.cpp: GPT-2's trainer in double and the tools run on it, compiled once
// for trident's programs (the declarations: models/gpt2/trainer.hpp, docs/ARCHITECTURE.md §9).
#include <trident/io/checkpoint.hpp>
#include <trident/io/weights.hpp>
#include <trident/models/gpt2/trainer.hpp>
#include <trident/train/evaluate.hpp>
#include <trident/train/report.hpp>
#include <trident/train/sample.hpp>

TRIDENT_GPT2_INSTANCES(template, double, double);
