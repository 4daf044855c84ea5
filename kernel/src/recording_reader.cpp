#include "noether/recording_reader.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "noether/error.hpp"
#include "recording.hpp"

namespace noether {

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& why) { throw UsageError(why); }

// A JSON number array of length n (the viewer indexes it without checks).
void numbers(const Json& parent, const char* key, std::size_t n, const std::string& where) {
    const auto it = parent.find(key);
    if (it == parent.end()) bad(where + " has no \"" + key + "\"");
    if (!it->is_array() || it->size() != n)
        bad(where + ": \"" + key + "\" must be an array of " + std::to_string(n) + " numbers, got " + it->dump());
    for (const Json& v : *it)
        if (!v.is_number() || !std::isfinite(v.get<double>()))
            bad(where + ": \"" + key + "\" must be an array of " + std::to_string(n) + " finite numbers, got " + it->dump());
}

std::string shorten(const std::string& s) { return s.size() > 60 ? s.substr(0, 57) + "..." : s; }

RecordingContents read_recording_checked(const std::string& rec) {
    RecordingContents out;
    if (rec.size() < 12 || rec.compare(0, 8, detail::kRecordingMagic) != 0)
        bad("it is not a noether recording (it does not start with NOETHREC; make one with noether run SCENE --record "
            "FILE.nrec)");
    const auto* u = reinterpret_cast<const unsigned char*>(rec.data());
    const std::size_t hlen = u[8] | (u[9] << 8) | (u[10] << 16) | (static_cast<std::size_t>(u[11]) << 24);
    if (hlen > rec.size() - 12)
        bad("the header claims " + std::to_string(hlen) + " bytes but the file has " + std::to_string(rec.size() - 12) +
            " after it (truncated or damaged)");
    out.header = rec.substr(12, hlen);
    out.data_offset = 12 + hlen;

    // The header: JSON, no key twice in any object (the command and the page would read
    // different values), and what the page reads present and well-typed.
    std::vector<std::set<std::string>> keys;
    std::string duplicate;
    const Json::parser_callback_t watch = [&](int, Json::parse_event_t ev, Json& parsed) {
        if (ev == Json::parse_event_t::object_start) keys.emplace_back();
        else if (ev == Json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
        else if (ev == Json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
                 duplicate.empty())
            duplicate = parsed.get<std::string>();
        return true;
    };
    Json h;
    try {
        h = Json::parse(out.header, watch);
    } catch (const Json::exception& e) {
        bad(std::string("the header is not JSON (") + e.what() + ")");
    }
    if (!duplicate.empty()) bad("the header has the key \"" + shorten(duplicate) + "\" twice");
    if (!h.is_object()) bad("the header must be a JSON object, got " + shorten(h.dump()));
    const auto fmt = h.find("format");
    if (fmt == h.end() || *fmt != "noether-recording")
        bad("the header's \"format\" must be \"noether-recording\", got " + (fmt == h.end() ? "nothing" : shorten(fmt->dump())));
    const auto bodies = h.find("bodies");
    if (bodies == h.end() || !bodies->is_array()) bad("the header has no \"bodies\" array");
    out.bodies = static_cast<long long>(bodies->size());
    const auto ff = h.find("frame_floats");
    if (ff == h.end() || !ff->is_number_integer())
        bad("the header's \"frame_floats\" must be an integer, got " + (ff == h.end() ? "nothing" : shorten(ff->dump())));
    out.frame_floats = ff->get<long long>();
    const auto contacts = h.find("contacts");
    if (contacts != h.end()) {
        if (!contacts->is_array()) bad("the header's \"contacts\" must be an array, got " + shorten(contacts->dump()));
        out.contacts = static_cast<long long>(contacts->size());
        for (std::size_t k = 0; k < contacts->size(); ++k) {
            const Json& c = (*contacts)[k];
            const std::string where = "contact " + std::to_string(k);
            if (!c.is_object() || !c.contains("body") || !c["body"].is_number_integer() || c["body"].get<long long>() < 0 ||
                c["body"].get<long long>() >= out.bodies)
                bad(where + " of the header has no \"body\" index of one of its " + std::to_string(out.bodies) + " bodies");
            if (c.contains("normal")) numbers(c, "normal", 3, where);
        }
    }
    const long long need = 3 + 7 * out.bodies + 6 * out.contacts;
    if (out.frame_floats != need)
        bad("the header's \"frame_floats\" is " + std::to_string(out.frame_floats) + " but its " +
            std::to_string(out.bodies) + " bodies" + (out.contacts ? " and " + std::to_string(out.contacts) + " contacts" : std::string()) +
            " need 3 + 7 x " + std::to_string(out.bodies) + (out.contacts ? " + 6 x " + std::to_string(out.contacts) : std::string()) +
            " = " + std::to_string(need));
    for (std::size_t b = 0; b < bodies->size(); ++b) {
        const Json& body = (*bodies)[b];
        const std::string where = "body " + std::to_string(b);
        if (!body.is_object() || !body.contains("name") || !body["name"].is_string())
            bad(where + " of the header has no \"name\" string");
        const auto shapes = body.find("shapes");
        if (shapes == body.end() || !shapes->is_array()) bad(where + " has no \"shapes\" array");
        for (std::size_t s = 0; s < shapes->size(); ++s) {
            const Json& sh = (*shapes)[s];
            const std::string sw = where + " shape " + std::to_string(s);
            if (!sh.is_object() || !sh.contains("type") || !sh["type"].is_string()) bad(sw + " has no \"type\" string");
            numbers(sh, "size", 3, sw);
            numbers(sh, "pos", 3, sw);
            numbers(sh, "quat", 4, sw);
            numbers(sh, "rgba", 4, sw);
        }
    }
    const auto joints = h.find("joints");
    if (joints == h.end() || !joints->is_array()) bad("the header has no \"joints\" array");
    for (std::size_t j = 0; j < joints->size(); ++j) {
        const Json& jt = (*joints)[j];
        const std::string where = "joint " + std::to_string(j);
        if (!jt.is_object()) bad(where + " of the header is not an object");
        for (const char* k : {"parent", "child"})
            if (!jt.contains(k) || !jt[k].is_number_integer())
                bad(where + " has no integer \"" + std::string(k) + "\"");
        numbers(jt, "anchor", 3, where);
        numbers(jt, "axis", 3, where);
    }

    // The frames: complete ones, up to the first that holds a non-finite value.
    const std::size_t frame_bytes = 4 * static_cast<std::size_t>(out.frame_floats);
    const std::size_t nbytes = rec.size() - out.data_offset;
    std::size_t frames = nbytes / frame_bytes;
    if (nbytes % frame_bytes)
        out.warnings.push_back("the file ends in the middle of a frame (a run that stopped?); the " +
                               std::to_string(frames) + " complete frames are shown");
    if (frames == 0) bad("it has no frames");
    for (std::size_t f = 0; f < frames; ++f) {
        const unsigned char* p = u + out.data_offset + f * frame_bytes;
        for (long long k = 0; k < out.frame_floats; ++k) {
            std::uint32_t bits = p[4 * k] | (p[4 * k + 1] << 8) | (p[4 * k + 2] << 16) |
                                 (static_cast<std::uint32_t>(p[4 * k + 3]) << 24);
            float v;
            std::memcpy(&v, &bits, 4);
            if (std::isfinite(v)) continue;
            const std::string what = k < 3 ? std::string(k == 0 ? "time" : k == 1 ? "energy" : "violation")
                                     : k < 3 + 7 * out.bodies ? "body " + std::to_string((k - 3) / 7) + " pose"
                                                              : "contact " + std::to_string((k - 3 - 7 * out.bodies) / 6) + " value";
            if (f == 0) bad("its first frame has a non-finite " + what);
            out.warnings.push_back("frame " + std::to_string(f) + " has a non-finite " + what + "; the " +
                                   std::to_string(f) + " frames before it are shown");
            out.frames = f;
            return out;
        }
    }
    out.frames = frames;
    return out;
}

}  // namespace

RecordingContents read_recording(const std::string& rec) {
    try {
        return read_recording_checked(rec);
    } catch (const nlohmann::json::exception& e) {  // a check above that the JSON library itself refused
        throw UsageError(std::string("the header cannot be read (") + e.what() + ")");
    }
}

}  // namespace noether
