// The fp8 module's contract: formats (format.hpp), producers' rules (profile.hpp), conversion
// (convert.hpp), the quantization helpers producers use (quantize.hpp) and bfloat16 (bfloat16.hpp).
#pragma once

#include "fp8/bfloat16.hpp"
#include "fp8/convert.hpp"
#include "fp8/format.hpp"
#include "fp8/profile.hpp"
#include "fp8/quantize.hpp"
