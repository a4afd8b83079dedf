// instances/cli.cpp: io/cli.hpp's definitions (CLI11), compiled once for all of trident's
// programs instead of once in each (docs/BUILD.md).
#define TRIDENT_CLI_IMPLEMENTATION
#include <trident/io/cli.hpp>
