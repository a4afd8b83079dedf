// The same include written from the include root: the check must refuse it too.
#pragma once
#include <trident/high/allowed.hpp>
