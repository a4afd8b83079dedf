// trident/models/gpt2/gpt2.hpp: GPT-2 on trident — the model (model.hpp), its trainer
// (trainer.hpp) and the single-process reference every parallel run is tested against.
#pragma once

#include "model.hpp"
#include "reference.hpp"
#include "trainer.hpp"
