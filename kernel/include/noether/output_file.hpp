// Writing a file a user named without replacing what is not ours (every writer of noether: run
// outputs and recordings, save_file, the CLI's --summary-json, sweep --out, view -o).
//
// A regular file, or a name that does not exist yet, is written as "<file><suffix>" and renamed
// over the file when complete, so a reader never sees half a file and a failed write leaves the
// old one. Anything else is written in place, never replaced: a device (/dev/null, /dev/full), a
// FIFO, a terminal, /dev/stdout and /proc/self/fd/N. A symbolic link is written through to its
// target (which is then what is renamed over), or refused where links are not to be followed
// (the sandbox). The temporary is always created anew (O_EXCL) and never through a link, so a
// link planted under the temporary's name cannot redirect the write. A directory is refused.
#pragma once

#include <cstdio>
#include <string>

#include "noether/export.h"

namespace noether {

class NOETHER_API OutputFile {
public:
    OutputFile() = default;
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    OutputFile(OutputFile&& o) noexcept;
    OutputFile& operator=(OutputFile&& o) noexcept;
    ~OutputFile();

    // Open `path` for writing (binary). Throws UsageError "cannot write '<path>': <reason>".
    void open(const std::string& path, const std::string& suffix = ".part", bool follow_links = true);
    std::FILE* fp() const { return fp_; }
    bool is_open() const { return fp_ != nullptr; }
    const std::string& path() const { return path_; }
    // The file being written now: the temporary, or the file itself when written in place.
    const std::string& writing() const { return tmp_.empty() ? target_ : tmp_; }
    bool in_place() const { return tmp_.empty(); }
    // Close and put the file in place: "" on success, else the reason (the temporary is then
    // left as it is, named in the reason).
    std::string commit();
    // Close without putting in place (a run that stopped early): the temporary stays.
    void close();

private:
    std::string path_, target_, tmp_;
    std::FILE* fp_ = nullptr;
};

// Write `text` to `path` as OutputFile does: "" on success, else "cannot write '<path>': <reason>".
NOETHER_API std::string write_file(const std::string& path, const std::string& text, bool follow_links = true);

// Why OutputFile could not write `path` ("" if it can, as far as can be told without writing):
// a directory, a missing or unwritable directory, an unwritable device, a link not to be
// followed. For hosts that write a file after a long run: refuse it before the run instead.
NOETHER_API std::string output_problem(const std::string& path, bool follow_links = true);

// True if both names exist and are the same file (same device and inode, links followed).
NOETHER_API bool same_file(const std::string& a, const std::string& b);

}  // namespace noether
