// Internal to the `noether` command: what its source files share.
#pragma once

#include <string>
#include <vector>

namespace noether_cli {

// Shared Lua helpers (scripts/lib): installed next to the program, else this build's source tree.
std::string scripts_dir();
// `<program dir>/../share/noether/<relative>` if it exists and is readable (an installed
// noether), else "".
std::string installed(const std::string& relative);
// Write `text` to `path` as noether::write_file does (a regular file through <path>.part renamed
// over it; a device, FIFO or /dev/stdout in place; a link through to its target): "" or the reason.
std::string write_out(const std::string& path, const std::string& text);
// Before a command does its work: "" if `out` can be written and is none of the inputs, else
// the reason ("cannot write 'P': it is a directory", "... is the input 'X'").
std::string check_out(const std::string& out, const std::vector<std::string>& inputs);
// `noether sweep` (sweep.cpp).
int cmd_sweep(const std::vector<std::string>& args);
// `noether view` (view.cpp) and `noether plot` (plot.cpp).
int cmd_view(const std::vector<std::string>& args);
int cmd_plot(const std::vector<std::string>& args);
// "compiled in (…)" or "not compiled in", for `noether version`.
std::string mpi_description();

}  // namespace noether_cli
