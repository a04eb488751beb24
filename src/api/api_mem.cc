// C entry points: the registration-on-allocation heap and foreign-memory registration.
#include "api/handles.h"
#include "fabric/heap.h"

using namespace stratacl;
using stratacl::api::report;

extern "C" {

sclResult_t sclMemAlloc(void** ptr, size_t size) {
  if (auto r = api::refused_in_child()) return *r;
  if (!ptr) return report(nullptr, Errorf(sclInvalidArgument, "ptr: NULL output pointer"));
  *ptr = nullptr;
  if (size == 0) return report(nullptr, Errorf(sclInvalidArgument, "size: 0 bytes"));
  Result<Heap*> heap = Heap::instance();
  if (!heap.ok()) return report(nullptr, heap.status());
  Result<void*> p = (*heap)->allocate(size);
  if (!p.ok()) return report(nullptr, p.status());
  *ptr = *p;
  return sclSuccess;
}

sclResult_t sclMemFree(void* ptr) {
  if (!ptr) return sclSuccess;  // like free(NULL)
  if (auto r = api::refused_in_child()) return *r;
  Heap* heap = existing_heap();
  if (!heap)
    return report(nullptr, Errorf(sclInvalidArgument, "ptr: %p is not from sclMemAlloc", ptr));
  return report(nullptr, heap->release(ptr));
}

sclResult_t sclCommRegister(const sclComm_t comm, void* buff, size_t size, void** handle) {
  if (auto r = api::refused_in_child()) return *r;
  Communicator* c = api::find_comm(comm);
  if (!c)
    return report(nullptr,
                  Errorf(sclInvalidArgument, "comm: %p is not a live communicator", (void*)comm));
  if (!handle) return report(c, Errorf(sclInvalidArgument, "handle: NULL output pointer"));
  if (!buff && size > 0)
    return report(c, Errorf(sclInvalidArgument, "buff: NULL with size %zu", size));
  *handle = nullptr;
  Result<void*> h = c->register_range(buff, size);
  if (!h.ok())
    return report(c, Status(h.status().code(), "sclCommRegister: " + h.status().message()));
  *handle = *h;
  return sclSuccess;
}

sclResult_t sclCommDeregister(const sclComm_t comm, void* handle) {
  if (auto r = api::refused_in_child()) return *r;
  Communicator* c = api::find_comm(comm);
  if (!c)
    return report(nullptr,
                  Errorf(sclInvalidArgument, "comm: %p is not a live communicator", (void*)comm));
  if (!c->deregister(handle)) {
    return report(c, Errorf(sclInvalidArgument,
                            "handle: %p is not a registration of this communicator", handle));
  }
  return sclSuccess;
}

}  // extern "C"
