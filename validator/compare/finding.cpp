#include "finding.hpp"

namespace mqa::compare {

std::string_view to_string(finding_class c) { return names::name_of(kFindingClassNames, c); }

}  // namespace mqa::compare
