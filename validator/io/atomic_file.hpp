// Output files appear whole or not at all: written to a hidden temporary next to the target
// (registered for removal on SIGINT/SIGTERM, see interrupt.hpp), then renamed over it. The
// target is an output_file's resolved target, so a symbolic link keeps pointing at the new file.
// Failures name the user's path and the system's reason, never the temporary.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <span>

#include "output_path.hpp"

namespace mqa::io {

// Writes the file's bytes to a stream; may throw (the file is then not written).
using stream_writer = std::function<void(std::ostream& out)>;

// Writes `file` whole through a temporary sibling of its target. Any failure removes the
// temporary and throws input_error naming file.path.
void write_atomically(const output_file& file, const stream_writer& write);

struct pending_file {
  output_file file;
  stream_writer write;
};

// Several files that belong together (run's report.json, report.xml, summary.md): every one is
// written to its temporary first; then all are renamed, in order, with interrupts held, so an
// interrupted run leaves either the whole new set or none of it, and a failed write none of it.
// (Only a rename failing after the paths were checked, which takes another process changing them
// meanwhile, can leave some files replaced: the message says so.) Put the file readers look for
// first (report.json) last.
void write_together(std::span<const pending_file> files);

}  // namespace mqa::io
