#include "buffers.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace mp {

namespace {
bool g_cma_refused = false;
}  // namespace

bool cma_refused() { return g_cma_refused; }
void set_cma_refused() { g_cma_refused = true; }

const char* mem_name(Mem m) {
  switch (m) {
    case Mem::kHeap:
      return "heap";
    case Mem::kMalloc:
      return "malloc";
    default:
      return "registered";
  }
}

Buffer::Buffer(Mem mem, sclDataType_t t, size_t count, size_t offset_elems, unsigned char sentinel,
               sclComm_t comm)
    : mem_(mem),
      dtype_(t),
      count_(count),
      offset_(offset_elems),
      es_(dtype_size(t)),
      sentinel_(sentinel) {
  const size_t bytes = whole_elems() * es_;
  if (mem == Mem::kHeap) {
    MP_OK(sclMemAlloc(&base_, bytes));
  } else {
    base_ = std::malloc(bytes);
    if (!base_) fatal("malloc(%zu) failed", bytes);
  }
  if (mem == Mem::kRegistered) {
    if (!comm) fatal("a registered buffer needs a communicator");
    reg_comm_ = comm;
    const sclResult_t r = sclCommRegister(comm, base_, bytes, &reg_handle_);
    if (r != sclSuccess) {
      // Where the kernel forbids cross-process reads (Yama ptrace_scope >= 1 between sibling
      // ranks, a seccomp policy), registration must fail saying so, and the buffer is then
      // foreign memory like any other: the calls still run, staged, and are checked.
      const char* why = sclGetLastError(comm);
      if (r != sclSystemError || !std::strstr(why, "process_vm_readv"))
        fatal_call("sclCommRegister", r, __FILE__, __LINE__);
      if (!cma_refused()) std::printf("registered buffers run staged: %s\n", why);
      set_cma_refused();
      reg_handle_ = nullptr;
    }
  }
  data_ = static_cast<char*>(base_) + offset_ * es_;
  fill_sentinel();
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (!base_) return;
  if (reg_handle_) MP_OK(sclCommDeregister(reg_comm_, reg_handle_));
  reg_handle_ = nullptr;
  if (mem_ == Mem::kHeap) {
    MP_OK(sclMemFree(base_));
  } else {
    std::free(base_);
  }
  base_ = data_ = nullptr;
}

Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    mem_ = o.mem_;
    dtype_ = o.dtype_;
    count_ = o.count_;
    offset_ = o.offset_;
    es_ = o.es_;
    sentinel_ = o.sentinel_;
    base_ = std::exchange(o.base_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    reg_comm_ = std::exchange(o.reg_comm_, nullptr);
    reg_handle_ = std::exchange(o.reg_handle_, nullptr);
  }
  return *this;
}

void Buffer::fill_sentinel() { std::memset(base_, sentinel_, whole_elems() * es_); }

std::vector<unsigned char> Buffer::image() const {
  return std::vector<unsigned char>(whole_elems() * es_, sentinel_);
}

uint64_t Buffer::check(Tally& tally, const CallInfo& info, const char* name,
                       const std::vector<unsigned char>& image) const {
  const auto* got = static_cast<const unsigned char*>(base_);
  const std::string guard = std::string(name) + "-guard";
  uint64_t wrong = 0;
  // Data first (the interesting part), then the guards on both sides.
  wrong +=
      tally.count_wrong(info, name, got + offset_ * es_, image.data() + offset_ * es_, count_, 0);
  if (offset_ > 0) {
    wrong +=
        tally.count_wrong(info, guard.c_str(), got, image.data(), offset_, -(long long)offset_);
  }
  wrong +=
      tally.count_wrong(info, guard.c_str(), got + (offset_ + count_) * es_,
                        image.data() + (offset_ + count_) * es_, kTrailGuard, (long long)count_);
  tally.record(wrong);
  return wrong;
}

}  // namespace mp
