// Origins, diagnostics and error classes.
#include "noether/error.hpp"

#include <algorithm>

#include "noether/version.hpp"

namespace noether {

const char* version() { return NOETHER_VERSION_STRING; }

std::string Origin::str() const {
    std::string s = file;
    if (!file.empty() && line > 0) s += ":" + std::to_string(line);
    if (!element.empty()) s += (s.empty() ? "" : " ") + element;
    return s;
}

std::string Diagnostic::str() const {
    std::string s = origin.str();
    if (!s.empty()) s += ": ";
    if (severity == Severity::warning) s += "warning: ";
    return s + message;
}

static std::string join(const std::vector<Diagnostic>& diags) {
    std::string s;
    for (const Diagnostic& d : diags) {
        if (d.severity != Severity::error) continue;
        if (!s.empty()) s += "\n";
        s += d.str();
    }
    return s.empty() ? "invalid model" : s;
}

ModelError::ModelError(std::vector<Diagnostic> diags) : Error(join(diags)), diags_(std::move(diags)) {}

std::string reword_options(const std::string& msg,
                           const std::function<std::string(const std::string& name, const std::string& value)>& word) {
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = msg.find("option '", from)) != std::string::npos;) {
        const std::size_t name_end = msg.find('\'', at + 8);
        if (name_end == std::string::npos) break;
        const std::string name = msg.substr(at + 8, name_end - at - 8);
        std::size_t end = name_end + 1;
        std::string value = "...";
        if (msg.compare(end, 3, " = ") == 0) {  // "option 'max_turn' = 0.1"
            const std::size_t v = end + 3, ve = msg.find_first_of(" ,;)", v);
            value = msg.substr(v, ve == std::string::npos ? std::string::npos : ve - v);
            end = ve == std::string::npos ? msg.size() : ve;
        } else if (!(end < msg.size() && msg[end] == ')' && at > 0 && msg[at - 1] == '(')) {
            out.append(msg, from, end - from);  // a statement about an option, not a suggestion
            from = end;
            continue;
        }
        out.append(msg, from, at - from);
        out += word(name, value);
        from = end;
    }
    out.append(msg, from, std::string::npos);
    return out;
}

std::string reword_import_settings(const std::string& msg,
                                   const std::function<std::string(const std::string& name, const std::string& value)>& word) {
    static const std::string kMark = "import setting '";
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = msg.find(kMark, from)) != std::string::npos;) {
        const std::size_t n0 = at + kMark.size(), name_end = msg.find('\'', n0);
        if (name_end == std::string::npos || msg.compare(name_end + 1, 3, " = ") != 0) break;
        const std::size_t v = name_end + 4, ve = std::min(msg.find_first_of(" ,;)", v), msg.size());
        out.append(msg, from, at - from);
        out += word(msg.substr(n0, name_end - n0), msg.substr(v, ve - v));
        from = ve;
    }
    out.append(msg, from, std::string::npos);
    return out;
}

}  // namespace noether
