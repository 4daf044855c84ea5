#include "noether/output_file.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "noether/error.hpp"

namespace noether {

namespace {

std::string reason(int err) { return std::strerror(err); }

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
    throw UsageError("cannot write '" + path + "': " + why);
}

bool starts_with(const std::string& s, const char* prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

// Where a write of `path` goes: `target` (the file itself, or a link's target) replaced through a
// temporary, or written in place (a device, FIFO, socket, terminal, /dev/stdout and its kin, or a
// dangling link, whose target the write creates). "" or why it cannot be written at all. The one
// rule OutputFile::open and output_problem both follow.
struct Destination {
    std::string target;
    bool in_place = false;
    bool dangling = false;
};
std::string destination(const std::string& path, bool follow_links, Destination& d) {
    d = Destination{path};
    if (path.empty()) return "the file name is empty";
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : reason(errno);
    if (S_ISLNK(st.st_mode)) {
        if (!follow_links) return "it is a symbolic link (links are not followed here)";
        if (starts_with(path, "/dev/") || starts_with(path, "/proc/")) {  // the stream itself, where it points
            d.in_place = true;
            return "";
        }
        char buf[PATH_MAX];
        if (!realpath(path.c_str(), buf)) {
            d.in_place = d.dangling = true;
            return "";
        }
        d.target = buf;
    }
    if (stat(d.target.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return "it is a directory";
        d.in_place = !S_ISREG(st.st_mode);
    }
    return "";
}

}  // namespace

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)), target_(std::move(o.target_)), tmp_(std::move(o.tmp_)), fp_(o.fp_) {
    o.fp_ = nullptr;
}

OutputFile& OutputFile::operator=(OutputFile&& o) noexcept {
    if (this != &o) {
        close();
        path_ = std::move(o.path_);
        target_ = std::move(o.target_);
        tmp_ = std::move(o.tmp_);
        fp_ = o.fp_;
        o.fp_ = nullptr;
    }
    return *this;
}

OutputFile::~OutputFile() { close(); }

void OutputFile::open(const std::string& path, const std::string& suffix, bool follow_links) {
    close();
    path_ = path;
    tmp_.clear();
    Destination dest;
    if (const std::string why = destination(path, follow_links, dest); !why.empty()) refuse(path, why);
    target_ = dest.target;
    int fd;
    if (dest.in_place) {
        // Never truncated: what is written goes to the device or stream as it is (created only
        // at the end of a dangling link).
        fd = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (follow_links ? 0 : O_NOFOLLOW) |
                                         (dest.dangling ? O_CREAT : 0),
                    0666);
        if (fd < 0) refuse(path, reason(errno));
    } else {
        tmp_ = target_ + suffix;
        // A stale temporary (or anything planted under its name) goes; a link is removed, not
        // followed. The new one is created exclusively and never through a link.
        struct stat ts;
        if (lstat(tmp_.c_str(), &ts) == 0) {
            if (S_ISDIR(ts.st_mode)) refuse(path, "its temporary '" + tmp_ + "' is a directory");
            if (unlink(tmp_.c_str()) != 0) refuse(path, "cannot remove the old temporary '" + tmp_ + "': " + reason(errno));
        }
        fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            const int e = errno;
            const std::string t = tmp_;
            tmp_.clear();
            refuse(path, "cannot create '" + t + "': " + reason(e));
        }
    }
    fp_ = fdopen(fd, "wb");
    if (!fp_) {
        const int e = errno;
        ::close(fd);
        refuse(path, reason(e));
    }
}

void OutputFile::close() {
    if (fp_) std::fclose(fp_);
    fp_ = nullptr;
}

std::string OutputFile::commit() {
    if (!fp_) return "'" + path_ + "' is not open";
    errno = 0;
    const bool written = std::fflush(fp_) == 0 && !std::ferror(fp_);
    int e = errno;
    const bool closed = std::fclose(fp_) == 0;
    if (!closed && e == 0) e = errno;
    fp_ = nullptr;
    if (!written || !closed) {
        const std::string why = "writing failed (" + (e ? reason(e) : std::string("I/O error")) + ")";
        return tmp_.empty() ? why : why + "; '" + path_ + "' was not replaced and the partial file is '" + tmp_ + "'";
    }
    if (tmp_.empty()) return "";
    if (std::rename(tmp_.c_str(), target_.c_str()) != 0)
        return "cannot rename '" + tmp_ + "' to '" + target_ + "': " + reason(errno);
    return "";
}

std::string write_file(const std::string& path, const std::string& text, bool follow_links) {
    OutputFile f;
    try {
        f.open(path, ".part", follow_links);
    } catch (const UsageError& e) {
        return e.what();
    }
    std::fwrite(text.data(), 1, text.size(), f.fp());
    const std::string err = f.commit();
    return err.empty() ? err : "cannot write '" + path + "': " + err;
}

std::string output_problem(const std::string& path, bool follow_links) {
    Destination d;
    if (const std::string why = destination(path, follow_links, d); !why.empty()) return why;
    if (d.in_place && !d.dangling) return access(d.target.c_str(), W_OK) == 0 ? "" : reason(errno);
    // A file to create (or replace through a temporary): its directory must take new files.
    const std::size_t slash = d.target.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : d.target.substr(0, slash);
    if (access(dir.c_str(), W_OK | X_OK) != 0) return "cannot create files in '" + dir + "': " + reason(errno);
    return "";
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat sa, sb;
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace noether
