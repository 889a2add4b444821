#pragma once
// TableReader lives in base/toml_reader.h; this header keeps the name node::TableReader for the
// code that still spells it so (tools/launch/scenario*.cc).

#include "base/toml_reader.h"

namespace meshlearn::node {
using meshlearn::TableReader;
}  // namespace meshlearn::node
