// trident/io/safetensors.hpp: tensors read from and written to Hugging Face's safetensors files.
//
// SafetensorsReader opens a file, checks all of it against the format and reads tensors by name,
// dtype and expected shape; SafetensorsWriter collects tensors and metadata and writes one file.
// The format itself, and the dtypes, are in safetensors_format.hpp.
#pragma once

#include "safetensors_format.hpp"
#include "safetensors_reader.hpp"
#include "safetensors_writer.hpp"
