// Origins, diagnostics and error classes.
#include "noether/error.hpp"

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

}  // namespace noether
