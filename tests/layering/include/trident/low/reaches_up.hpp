// A header of the lower layer that includes one of the higher: the check must refuse it.
#pragma once
#include "../high/allowed.hpp"
