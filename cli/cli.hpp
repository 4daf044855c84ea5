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
// Write `text` to <path>.part and rename it to `path`; false (and no .part left) if any of it failed.
bool write_atomically(const std::string& path, const std::string& text);
// `noether sweep` (sweep.cpp).
int cmd_sweep(const std::vector<std::string>& args);
// `noether view` (view.cpp) and `noether plot` (plot.cpp).
int cmd_view(const std::vector<std::string>& args);
int cmd_plot(const std::vector<std::string>& args);
// "compiled in (…)" or "not compiled in", for `noether version`.
std::string mpi_description();

}  // namespace noether_cli
