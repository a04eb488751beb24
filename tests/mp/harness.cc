#include "harness.h"

#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "reduce/reduce.h"
#include "reference.h"

namespace mp {
namespace {

Comm g_world;
const char* g_program = "mp_tests";
constexpr int kMaxLinesPerProcess = 40;
constexpr int kMaxLinesPerCheck = 5;

}  // namespace

Comm describe(sclComm_t comm) {
  Comm c;
  c.comm = comm;
  MP_OK(sclCommUserRank(comm, &c.rank));
  MP_OK(sclCommCount(comm, &c.n));
  return c;
}

const Comm& world() { return g_world; }
void set_world(const Comm& world) { g_world = world; }

void set_program_name(const char* name) { g_program = name; }

void fatal(const char* fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: rank %d: FATAL: %s\n", g_program, g_world.rank, text);
  fflush(stdout);
  fflush(stderr);
  exit(1);
}

void fatal_call(const char* expr, sclResult_t r, const char* file, int line) {
  const char* thread_error = sclGetLastError(nullptr);
  const char* comm_error = g_world.comm ? sclGetLastError(g_world.comm) : "";
  fatal("%s:%d: %s returned %d (%s); last error: \"%s\"; world comm last error: \"%s\"", file, line,
        expr, int(r), sclGetErrorString(r), thread_error, comm_error);
}

const char* op_name(int op) {
  return op >= 0 && op < sclNumOps ? stratacl::reduce::op_name(sclRedOp_t(op)) : "-";
}

std::string CallInfo::text() const {
  char buf[512];
  snprintf(buf, sizeof buf, "%s dtype=%s op=%s count=%zu root=%s%s%s", coll.c_str(),
           dtype_name(dtype), op_name(op), count, root < 0 ? "-" : std::to_string(root).c_str(),
           detail.empty() ? "" : " ", detail.c_str());
  return buf;
}

uint64_t Tally::compare(const CallInfo& info, const char* region, const void* got, const void* want,
                        size_t elems, long long first_index) {
  const uint64_t wrong = count_wrong(info, region, got, want, elems, first_index);
  record(wrong);
  return wrong;
}

uint64_t Tally::count_wrong(const CallInfo& info, const char* region, const void* got,
                            const void* want, size_t elems, long long first_index) {
  const size_t es = dtype_size(info.dtype);
  elements_ += elems;
  if (elems == 0 || std::memcmp(got, want, elems * es) == 0) return 0;
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  uint64_t wrong = 0;
  int shown = 0;
  for (size_t k = 0; k < elems; ++k) {
    if (std::memcmp(g + k * es, w + k * es, es) == 0) continue;
    ++wrong;
    if (shown < kMaxLinesPerCheck && lines_printed_ < kMaxLinesPerProcess) {
      ++shown;
      ++lines_printed_;
      const uint64_t gb = ref::load_bits(got, info.dtype, k);
      const uint64_t wb = ref::load_bits(want, info.dtype, k);
      fprintf(stderr, "MISMATCH rank %d: %s: %s[%lld]: got %s, expected %s\n", g_world.rank,
              info.text().c_str(), region, first_index + (long long)k,
              ref::format_bits(info.dtype, gb).c_str(), ref::format_bits(info.dtype, wb).c_str());
    }
  }
  if (lines_printed_ < kMaxLinesPerProcess) {
    ++lines_printed_;
    fprintf(stderr, "MISMATCH rank %d: %s: %s: %llu of %zu elements wrong\n", g_world.rank,
            info.text().c_str(), region, (unsigned long long)wrong, elems);
  }
  wrong_elements_ += wrong;
  return wrong;
}

void Tally::expect(bool ok, const CallInfo& info, const std::string& what) {
  if (ok) {
    ++passed_;
    return;
  }
  ++failed_;
  if (lines_printed_ < kMaxLinesPerProcess) {
    ++lines_printed_;
    fprintf(stderr, "FAILED rank %d: %s: %s\n", g_world.rank, info.text().c_str(), what.c_str());
  }
}

Tally& global_tally() {
  static Tally t;
  return t;
}

int finish(const char* name) {
  const Tally& t = global_tally();
  const Comm& w = world();
  uint64_t* buf = nullptr;
  MP_OK(sclMemAlloc(reinterpret_cast<void**>(&buf), 4 * sizeof(uint64_t)));
  buf[0] = t.passed();
  buf[1] = t.failed();
  buf[2] = t.elements();
  buf[3] = t.wrong_elements();
  MP_OK(sclAllReduce(buf, buf, 4, sclUint64, sclSum, w.comm, nullptr));
  const uint64_t passed = buf[0], failed = buf[1], elements = buf[2], wrong = buf[3];
  MP_OK(sclMemFree(buf));
  if (t.failed() > 0) {
    fprintf(stderr, "mp_tests %s: rank %d: %llu of %llu checks FAILED (%llu wrong elements)\n",
            name, w.rank, (unsigned long long)t.failed(),
            (unsigned long long)(t.passed() + t.failed()), (unsigned long long)t.wrong_elements());
  }
  const bool none = passed + failed == 0;  // a case that checked nothing is broken
  if (w.rank == 0) {
    if (none) {
      printf("mp_tests %s: FAILED: no checks ran\n", name);
    } else if (failed == 0) {
      printf("mp_tests %s: %llu checks passed (%llu elements, %d ranks)\n", name,
             (unsigned long long)passed, (unsigned long long)elements, w.n);
    } else {
      printf("mp_tests %s: %llu of %llu checks FAILED (%llu of %llu elements wrong, %d ranks)\n",
             name, (unsigned long long)failed, (unsigned long long)(passed + failed),
             (unsigned long long)wrong, (unsigned long long)elements, w.n);
    }
    printf("%llu passed, %llu failed\n", (unsigned long long)passed, (unsigned long long)failed);
  }
  fflush(stdout);
  fflush(stderr);
  return (t.failed() > 0 || failed > 0 || none) ? 1 : 0;
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace mp
