// Test buffers: library heap memory (sclMemAlloc: zero-copy), foreign memory (malloc: staged) or
// foreign memory registered on a communicator (sclCommRegister: read by peers with CMA),
// with an element offset from the allocation start (a pointer that is element-aligned but, with
// offset 1, not 64-byte aligned), and guard elements on both sides.
//
// Layout of one allocation, in elements:
//   [offset lead-guard elements][count data elements][kTrailGuard trail-guard elements]
// Everything starts out as the sentinel byte. image() gives a host copy of the whole allocation
// pre-filled the same way, so a test writes the expected data values into the image's data part
// and compares the whole allocation: data and guards in one pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness.h"
#include "stratacl/stratacl.h"

namespace mp {

enum class Mem { kHeap, kMalloc, kRegistered };
const char* mem_name(Mem m);

// True once sclCommRegister was refused because the kernel forbids cross-process reads here.
bool cma_refused();
void set_cma_refused();

class Buffer {
 public:
  static constexpr size_t kTrailGuard = 5;

  Buffer() = default;
  // `comm` is the communicator a kRegistered buffer is registered on.
  Buffer(Mem mem, sclDataType_t t, size_t count, size_t offset_elems, unsigned char sentinel,
         sclComm_t comm = nullptr);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // The data pointer (allocation start + offset elements).
  void* data() const { return data_; }
  char* bytes() const { return static_cast<char*>(data_); }
  // Pointer to element i of the data.
  void* at(size_t i) const { return bytes() + i * es_; }
  size_t count() const { return count_; }
  size_t offset() const { return offset_; }
  size_t elem_size() const { return es_; }
  sclDataType_t dtype() const { return dtype_; }
  Mem mem() const { return mem_; }
  // The whole allocation: lead guard + data + trail guard.
  const void* whole() const { return base_; }
  size_t whole_elems() const { return offset_ + count_ + kTrailGuard; }

  // Resets the whole allocation to the sentinel.
  void fill_sentinel();

  // A host copy of the whole allocation, pre-filled with the sentinel; data(image) is where
  // element 0 of the data goes.
  std::vector<unsigned char> image() const;
  void* image_data(std::vector<unsigned char>& image) const { return image.data() + offset_ * es_; }

  // Compares the whole allocation with `image`, reporting data elements by their index and guard
  // elements as region "<name>-guard" (lead guards at negative indices). Returns wrong elements.
  uint64_t check(Tally& tally, const CallInfo& info, const char* name,
                 const std::vector<unsigned char>& image) const;

 private:
  void release();

  Mem mem_ = Mem::kHeap;
  sclDataType_t dtype_ = sclUint8;
  size_t count_ = 0, offset_ = 0, es_ = 1;
  unsigned char sentinel_ = 0;
  void* base_ = nullptr;
  void* data_ = nullptr;
  sclComm_t reg_comm_ = nullptr;
  void* reg_handle_ = nullptr;
};

}  // namespace mp
