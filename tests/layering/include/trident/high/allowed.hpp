// A header of the higher layer that includes one of its own and one below: allowed.
#pragma once
#include "../low/reaches_up.hpp"
#include "sibling.hpp"
