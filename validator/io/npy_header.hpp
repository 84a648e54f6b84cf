// The header of an .npy file: the text after the preamble, which numpy.lib.format reads with
// ast.literal_eval and then requires to be a dict with exactly the keys 'descr', 'fortran_order'
// and 'shape', a bool and a tuple of ints. xtensor's parse_header is lax (it accepts
// "(48abc, 131xyz)", "(48.0, 131)", "' <f4'", reads "(48 131)" as [48131]) and strict where NumPy
// is not (it needs the keys in NumPy's order), so this is our own parser for exactly this small
// grammar. It accepts a subset of what NumPy accepts, large enough for every header NumPy writes
// or a person would write by hand, and rejects everything NumPy rejects:
//
//   header  = dict pad "\n"            pad: spaces and tabs (NumPy pads to 64 bytes)
//   dict    = "{" entry ("," entry)* [","] "}"           each key once, in any order
//   entry   = string ":" value
//   value   = string | "True" | "False" | tuple
//   tuple   = "(" ")" | "(" int "," ")" | "(" int ("," int)+ [","] ")"
//   int     = "0" | [1-9][0-9]*        decimal, no sign, below 2^64
//   string  = '...' | "..."            no backslash, no line break inside
//
// with spaces, tabs and line breaks allowed between tokens inside the braces. Left out on
// purpose, though Python would take them: Python 2's "3L", hex, "_" digit separators, signs,
// parenthesised or bool shape entries, string prefixes and escapes, adjacent-string
// concatenation, comments, duplicate keys (Python keeps the last one), lists or dicts as values.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mqa::io {

struct npy_header {
  std::string typestring;  // the 'descr' string, e.g. "<f4", "|u1"
  std::vector<std::size_t> shape;
  bool fortran_order = false;
};

// NumPy refuses longer headers ("may not be safe to load securely", numpy >= 1.24).
inline constexpr std::size_t kMaxNpyHeaderLength = 10000;

// Thrown for text outside the grammar; what() says what was expected at which character.
class npy_header_syntax : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

npy_header parse_npy_header(std::string_view text);

}  // namespace mqa::io
