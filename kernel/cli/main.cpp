// The `noether` command: a host like any other, built on the public API.
//
//   noether plugins [--json]     list every loaded plugin (kind, name, description, path)
//   noether version
//
// Exit status: 0 success, 1 simulation failed, 2 bad input.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "noether/noether.hpp"

namespace {

void usage(FILE* out) {
    std::fprintf(out,
                 "usage: noether <command> [options]\n"
                 "commands:\n"
                 "  plugins [--json]   list the loaded plugins (kind, name, description, path)\n"
                 "  version            print the version\n"
                 "  help               this text\n"
                 "environment: NOETHER_PLUGIN_PATH (':'-separated extra plugin directories)\n");
}

std::string json_escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\t': o += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    o += buf;
                } else {
                    o += c;
                }
        }
    }
    return o;
}

int cmd_plugins(const std::vector<std::string>& args) {
    bool json = false;
    for (const std::string& a : args) {
        if (a == "--json") json = true;
        else {
            std::fprintf(stderr, "noether plugins: unknown option '%s'\n", a.c_str());
            return 2;
        }
    }
    noether::Registry& reg = noether::Registry::global();
    const auto list = reg.list();
    if (json) {
        std::printf("{\"plugins\": [");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const auto& p = list[i];
            std::printf("%s\n  {\"kind\": \"%s\", \"name\": \"%s\", \"description\": \"%s\", \"path\": \"%s\"}",
                        i ? "," : "", noether::kind_name(p.kind), json_escape(p.name).c_str(),
                        json_escape(p.description).c_str(), json_escape(p.path).c_str());
        }
        std::printf("\n], \"errors\": [");
        for (std::size_t i = 0; i < reg.errors().size(); ++i)
            std::printf("%s\n  \"%s\"", i ? "," : "", json_escape(reg.errors()[i].what()).c_str());
        std::printf("\n]}\n");
    } else {
        std::printf("%-11s %-18s %s\n", "KIND", "NAME", "DESCRIPTION / PATH");
        for (const auto& p : list)
            std::printf("%-11s %-18s %s\n%31s%s\n", noether::kind_name(p.kind), p.name.c_str(), p.description.c_str(),
                        "", p.path.c_str());
        for (const auto& e : reg.errors()) std::fprintf(stderr, "warning: %s\n", e.what());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
        if (cmd == "plugins") return cmd_plugins(args);
        if (cmd == "version" || cmd == "--version") {
            std::printf("noether %s\n", noether::version());
            return 0;
        }
        if (cmd == "help" || cmd == "--help" || cmd == "-h") {
            usage(stdout);
            return 0;
        }
        std::fprintf(stderr, "noether: unknown command '%s'\n", cmd.c_str());
        usage(stderr);
        return 2;
    } catch (const noether::Error& e) {
        std::fprintf(stderr, "noether: %s\n", e.what());
        return 2;
    }
}
