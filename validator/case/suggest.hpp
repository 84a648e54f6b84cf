// "did you mean": the accepted name closest to a misspelt one, so a typo's message names the fix.
#pragma once

#include <string>
#include <string_view>

namespace mqa::cases {

// ", did you mean 'X'?" when one name of the comma-separated `accepted` list is within a small
// edit distance of `text` (at most 2 edits, and fewer than half its letters); otherwise "".
std::string did_you_mean(std::string_view text, std::string_view accepted);

}  // namespace mqa::cases
