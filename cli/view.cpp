// `noether view FILE.nrec [-o FILE.html]`: one self-contained HTML page that plays a recording
// (docs/viewer.md). The page is the template cli/viewer/viewer.html with three.js (Debian's
// libjs-three), the recording's header (JSON) and its frames (base64 float32) inlined.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "noether/recording_reader.hpp"

namespace {

const char* const kTemplate =
#include "viewer_html.inc"
    ;

bool read_file(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    return static_cast<bool>(f) || f.eof();
}

std::string base64(const unsigned char* p, std::size_t n) {
    static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < n; i += 3) {
        const unsigned v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
        out += a[v >> 18], out += a[(v >> 12) & 63], out += a[(v >> 6) & 63], out += a[v & 63];
    }
    if (i + 1 == n) {
        const unsigned v = p[i] << 16;
        out += a[v >> 18], out += a[(v >> 12) & 63], out += "==";
    } else if (i + 2 == n) {
        const unsigned v = (p[i] << 16) | (p[i + 1] << 8);
        out += a[v >> 18], out += a[(v >> 12) & 63], out += a[(v >> 6) & 63], out += '=';
    }
    return out;
}

// The template with each placeholder replaced (found in the template only, so that inserted text
// that happens to contain a placeholder is left alone).
std::string fill(const std::string& tmpl, const std::vector<std::pair<std::string, std::string>>& subs) {
    std::vector<std::pair<std::size_t, std::size_t>> at;  // position in tmpl, index into subs
    for (std::size_t i = 0; i < subs.size(); ++i)
        if (const std::size_t p = tmpl.find(subs[i].first); p != std::string::npos) at.emplace_back(p, i);
    std::sort(at.begin(), at.end());
    std::string out;
    std::size_t from = 0;
    for (const auto& [p, i] : at) {
        out.append(tmpl, from, p - from);
        out += subs[i].second;
        from = p + subs[i].first.size();
    }
    out.append(tmpl, from, std::string::npos);
    return out;
}

// Text that sits inside a <script> element: "</" would end it early.
std::string script_safe(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '!')) out += "\\u003c";
        else out += s[i];
    }
    return out;
}

// JSON inside a <script> element: every '<' as \u003c (JSON has '<' only inside strings, where
// the escape means the same), so that no markup can start there.
std::string json_safe(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '<') out += "\\u003c";
        else out += c;
    }
    return out;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else out += c;
    }
    return out;
}

std::string three_dir() {
    if (const char* e = std::getenv("NOETHER_THREE_DIR"); e && *e) return e;
    return "/usr/share/javascript/three";
}

}  // namespace

int noether_cli::cmd_view(const std::vector<std::string>& args) {
    std::string in, out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-o" || a == "--out") {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "noether view: %s needs a file name\n", a.c_str());
                return 2;
            }
            out = args[++i];
        } else if (a == "--help" || a == "-h") {
            std::printf("usage: noether view FILE.nrec [-o FILE.html]\n"
                        "  writes one self-contained HTML page that plays the recording (noether run --record)\n");
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "noether view: unknown option '%s'\n", a.c_str());
            return 2;
        } else if (in.empty()) {
            in = a;
        } else {
            std::fprintf(stderr, "noether view: one recording at a time (got '%s' and '%s')\n", in.c_str(), a.c_str());
            return 2;
        }
    }
    if (in.empty()) {
        std::fprintf(stderr, "noether view: which recording? (noether view FILE.nrec -o FILE.html)\n");
        return 2;
    }
    if (out.empty()) {
        const std::size_t dot = in.rfind('.');
        out = (dot != std::string::npos && in.find('/', dot) == std::string::npos ? in.substr(0, dot) : in) + ".html";
    }
    if (const std::string why = check_out(out, {in}); !why.empty()) {
        std::fprintf(stderr, "noether view: %s\n", why.c_str());
        return 2;
    }
    std::string rec;
    if (!read_file(in, rec)) {
        std::fprintf(stderr, "noether view: cannot read '%s'\n", in.c_str());
        return 2;
    }
    noether::RecordingContents rc;
    try {
        rc = noether::read_recording(rec);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "noether view: '%s': %s\n", in.c_str(), e.what());
        return 2;
    }
    for (const std::string& w : rc.warnings) std::fprintf(stderr, "noether view: warning: '%s': %s\n", in.c_str(), w.c_str());
    const std::string& header = rc.header;
    const std::size_t frames = rc.frames, frame_bytes = 4 * static_cast<std::size_t>(rc.frame_floats);
    const auto* u = reinterpret_cast<const unsigned char*>(rec.data());
    const std::size_t data = rc.data_offset;
    const std::string dir = three_dir();
    std::string three, orbit;
    if (!read_file(dir + "/three.min.js", three) || !read_file(dir + "/examples/js/controls/OrbitControls.js", orbit)) {
        std::fprintf(stderr, "noether view: three.js not found in %s (install the Debian package libjs-three, or set "
                             "NOETHER_THREE_DIR to a directory with three.min.js and examples/js/controls/OrbitControls.js)\n",
                     dir.c_str());
        return 2;
    }
    const std::string page = fill(kTemplate, {{"@@TITLE@@", html_escape("noether: " + in)},
                                              {"/*NOETHER:THREE*/", script_safe(three)},
                                              {"/*NOETHER:ORBIT*/", script_safe(orbit)},
                                              {"@@HEADER@@", json_safe(header)},
                                              {"@@FRAMES@@", base64(u + data, frames * frame_bytes)}});
    if (const std::string err = write_out(out, page); !err.empty()) {
        std::fprintf(stderr, "noether view: %s\n", err.c_str());
        return 2;
    }
    std::printf("noether view: %s (%zu frames) -> %s (%.1f MB)\n", in.c_str(), frames, out.c_str(), page.size() / 1e6);
    return 0;
}
