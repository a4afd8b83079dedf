// A CUDA header of the lower layer that includes one of the higher: refused like a .hpp.
#pragma once
#include "../high/allowed.hpp"
