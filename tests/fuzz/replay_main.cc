// fuzz_replay: runs the fuzz targets over saved inputs without libFuzzer, so every build (gcc or
// clang, plain or sanitized) replays the committed corpus as a test, and a crash found by the
// fuzzer can be reproduced and debugged in any tree.
//
// Usage: fuzz_replay TARGET=PATH...   (TARGET: wire, unique_id or root; PATH: a file or a
// directory, whose regular files are all replayed in name order)
//
// The targets all define LLVMFuzzerTestOneInput; for this binary CMake compiles each one with that
// name defined to stratacl_fuzz_<target>, so they can live side by side.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int stratacl_fuzz_wire(const uint8_t* data, size_t size);
extern "C" int stratacl_fuzz_unique_id(const uint8_t* data, size_t size);
extern "C" int stratacl_fuzz_root(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using Target = int (*)(const uint8_t*, size_t);

struct Named {
  const char* name;
  Target fn;
};
constexpr Named kTargets[] = {
    {"wire", stratacl_fuzz_wire},
    {"unique_id", stratacl_fuzz_unique_id},
    {"root", stratacl_fuzz_root},
};

Target find_target(const std::string& name) {
  for (const Named& t : kTargets) {
    if (name == t.name) return t.fn;
  }
  return nullptr;
}

void run(Target fn, const fs::path& file) {
  // An exactly-sized heap buffer, as libFuzzer passes it, so that a sanitizer build catches a
  // read even one byte past the input.
  std::vector<uint8_t> data(fs::file_size(file));
  std::ifstream in(file, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(data.data()), std::streamsize(data.size()))) {
    std::fprintf(stderr, "cannot read %s\n", file.c_str());
    std::exit(1);
  }
  std::fprintf(stderr, "  %s (%zu bytes)\n", file.c_str(), data.size());
  fn(data.data(), data.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TARGET=PATH...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    Target fn = eq == std::string::npos ? nullptr : find_target(arg.substr(0, eq));
    if (!fn) {
      std::fprintf(stderr, "%s: bad argument \"%s\": want TARGET=PATH\n", argv[0], argv[i]);
      return 2;
    }
    const fs::path path = arg.substr(eq + 1);
    std::vector<fs::path> files;
    if (fs::is_directory(path)) {
      for (const fs::directory_entry& e : fs::directory_iterator(path)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
    } else if (fs::is_regular_file(path)) {
      files.push_back(path);
    }
    // A wrong path must fail the test, not pass it having replayed nothing.
    if (files.empty()) {
      std::fprintf(stderr, "%s: no inputs at %s\n", argv[0], path.c_str());
      return 1;
    }
    std::fprintf(stderr, "%s: %zu inputs\n", arg.c_str(), files.size());
    fn(nullptr, 0);  // libFuzzer always tries the empty input first
    for (const fs::path& f : files) run(fn, f);
  }
  std::fprintf(stderr, "all inputs replayed\n");
  return 0;
}
