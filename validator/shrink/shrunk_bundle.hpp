// The bundle of a cut (validator/cut): an ordinary bundle that `mqacheck check` and any adapter
// read like another. Its case is the original's with the cut's shapes, its windows as an
// `explicit` layout (out_of_range kept from the original), top-k capped at the cut's keys, an
// `origin` naming the original (so no generator is asked to rebuild the arrays, cases/README.md)
// and a description listing the rows, keys, heads and head_dim elements kept.
#pragma once

#include "validator/bundle/bundle.hpp"
#include "validator/cut/cut.hpp"

namespace mqa::shrink {

// `original` as loaded (topk resolved); the reference is computed here (keeps NaN, as every bundle's).
bundle::bundle shrunk_bundle(const bundle::bundle& original, const cut::selection& kept, const cut::problem& cut,
                             unsigned threads = 0);

// "0-3, 7, 9-11": ascending indices as ranges, at most `limit` characters ("..." past it).
std::string ranges(const std::vector<std::int64_t>& indices, std::size_t limit = 160);

}  // namespace mqa::shrink
