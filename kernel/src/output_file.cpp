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
    path_ = target_ = path;
    tmp_.clear();
    if (path.empty()) refuse(path, "the file name is empty");
    bool in_place = false;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            if (!follow_links) refuse(path, "it is a symbolic link (links are not followed here)");
            // /dev/stdout, /dev/fd/N, /proc/self/fd/N: the stream itself, written where it points.
            if (starts_with(path, "/dev/") || starts_with(path, "/proc/")) {
                in_place = true;
            } else {
                char buf[PATH_MAX];
                if (realpath(path.c_str(), buf)) target_ = buf;
                else in_place = true;  // a dangling link: written through, which creates its target
            }
        }
        if (!in_place && stat(target_.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode)) refuse(path, "it is a directory");
            if (!S_ISREG(st.st_mode)) in_place = true;  // device, FIFO, socket, terminal
        }
    } else if (errno != ENOENT) {
        refuse(path, reason(errno));
    }
    int fd;
    if (in_place) {
        // Never created or truncated: what is written goes to the device or stream as it is.
        fd = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (follow_links ? 0 : O_NOFOLLOW));
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
    if (path.empty()) return "the file name is empty";
    std::string target = path;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            if (!follow_links) return "it is a symbolic link (links are not followed here)";
            if (starts_with(path, "/dev/") || starts_with(path, "/proc/"))
                return access(path.c_str(), W_OK) == 0 ? "" : reason(errno);
            char buf[PATH_MAX];
            if (realpath(path.c_str(), buf)) target = buf;
        }
        if (stat(target.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode)) return "it is a directory";
            if (!S_ISREG(st.st_mode)) return access(target.c_str(), W_OK) == 0 ? "" : reason(errno);
        }
    } else if (errno != ENOENT) {
        return reason(errno);
    }
    const std::size_t slash = target.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
    if (access(dir.c_str(), W_OK | X_OK) != 0) return "cannot create files in '" + dir + "': " + reason(errno);
    return "";
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat sa, sb;
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace noether
