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

namespace {

// Replace every suggestion "MARK NAME' = VALUE" (and, with bare, "(MARK NAME')") in msg by
// word(NAME, VALUE) (VALUE "..." for a bare one); any other mention is a statement, left alone.
std::string reword_marked(const std::string& msg, const std::string& mark, bool bare,
                          const std::function<std::string(const std::string& name, const std::string& value)>& word) {
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = msg.find(mark, from)) != std::string::npos;) {
        const std::size_t n0 = at + mark.size(), name_end = msg.find('\'', n0);
        if (name_end == std::string::npos) break;
        std::size_t end = name_end + 1;
        std::string value = "...";
        if (msg.compare(end, 3, " = ") == 0) {  // "option 'max_turn' = 0.1"
            const std::size_t v = end + 3;
            end = std::min(msg.find_first_of(" ,;)", v), msg.size());
            value = msg.substr(v, end - v);
        } else if (!(bare && end < msg.size() && msg[end] == ')' && at > 0 && msg[at - 1] == '(')) {
            out.append(msg, from, end - from);  // a statement about it, not a suggestion
            from = end;
            continue;
        }
        out.append(msg, from, at - from);
        out += word(msg.substr(n0, name_end - n0), value);
        from = end;
    }
    out.append(msg, from, std::string::npos);
    return out;
}

}  // namespace

std::string reword_options(const std::string& msg,
                           const std::function<std::string(const std::string& name, const std::string& value)>& word) {
    return reword_marked(msg, "option '", true, word);
}

std::string reword_import_settings(const std::string& msg,
                                   const std::function<std::string(const std::string& name, const std::string& value)>& word) {
    return reword_marked(msg, "import setting '", false, word);
}

}  // namespace noether
