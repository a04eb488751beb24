// C entry points: the registration-on-allocation heap and foreign-memory registration.
#include <mutex>
#include <set>

#include "api/handles.h"
#include "api/validate.h"
#include "fabric/heap.h"

using namespace stratacl;
using stratacl::api::report;

struct sclWindow {};  // the public handle type

namespace {

// A window: a heap buffer as it is, or other memory registered for single-copy reads.
struct Window : sclWindow {
  const Communicator* comm;
  void* buff;
  void* registration;  // sclCommRegister's handle; NULL for heap memory
};

std::mutex g_windows_mu;
std::set<const sclWindow*>& windows() {
  static auto* s = new std::set<const sclWindow*>();
  return *s;
}

}  // namespace

extern "C" {

sclResult_t sclMemAlloc(void** ptr, size_t size) {
  if (auto r = api::refused_in_child()) return *r;
  if (!ptr) return report(nullptr, Errorf(sclInvalidArgument, "ptr: NULL output pointer"));
  *ptr = nullptr;
  if (size == 0) return report(nullptr, Errorf(sclInvalidArgument, "size: 0 bytes"));
  Result<Heap*> heap = Heap::instance();
  if (!heap.ok()) return report(nullptr, heap.status());
  Result<void*> p = (*heap)->allocate(size, /*user=*/true);
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
  return report(nullptr, heap->release(ptr, /*user=*/true));
}

sclResult_t sclCommRegister(const sclComm_t comm, void* buff, size_t size, void** handle) {
  if (auto r = api::refused_in_child()) return *r;
  Communicator* c = api::find_comm(comm);
  if (!c) return report(nullptr, api::not_live(comm));
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
  if (!c) return report(nullptr, api::not_live(comm));
  if (!c->deregister(handle)) {
    return report(c, Errorf(sclInvalidArgument,
                            "handle: %p is not a registration of this communicator", handle));
  }
  return sclSuccess;
}

sclResult_t sclCommWindowRegister(sclComm_t comm, void* buff, size_t size, sclWindow_t* win,
                                  int winFlags) {
  if (auto r = api::refused_in_child()) return *r;
  Communicator* c = api::find_comm(comm);
  if (!c) return report(nullptr, api::not_live(comm));
  if (!win) return report(c, Errorf(sclInvalidArgument, "win: NULL output pointer"));
  *win = nullptr;
  if ((winFlags & ~(SCL_WIN_COLL_SYMMETRIC | SCL_WIN_STRICT_ORDERING)) != 0) {
    return report(c, Errorf(sclInvalidArgument,
                            "winFlags: 0x%x (use SCL_WIN_DEFAULT, or SCL_WIN_COLL_SYMMETRIC and "
                            "SCL_WIN_STRICT_ORDERING)",
                            unsigned(winFlags)));
  }
  if (!buff || size == 0)
    return report(c, Errorf(sclInvalidArgument, "buff: %p with size %zu", buff, size));
  if (Status s = api::check_buffer("buff", buff, size, sclUint8); !s.ok()) return report(c, s);
  auto w = std::make_unique<Window>();
  w->comm = c;
  w->buff = buff;
  w->registration = nullptr;
  if (classify(buff, size, existing_heap(), nullptr) != MemKind::kHeap) {
    Result<void*> h = c->register_range(buff, size);
    if (!h.ok()) {
      return report(c, Status(h.status().code(), "sclCommWindowRegister: " + h.status().message()));
    }
    w->registration = *h;
  }
  std::lock_guard lock(g_windows_mu);
  windows().insert(w.get());
  *win = w.release();
  return sclSuccess;
}

sclResult_t sclWinGetUserPtr(sclComm_t comm, sclWindow_t win, void** outUserPtr) {
  if (auto r = api::refused_in_child()) return *r;
  Communicator* c = api::find_comm(comm);
  if (!c) return report(nullptr, api::not_live(comm));
  if (!outUserPtr) return report(c, Errorf(sclInvalidArgument, "outUserPtr: NULL pointer"));
  std::lock_guard lock(g_windows_mu);
  auto it = windows().find(win);
  if (it == windows().end() || static_cast<const Window*>(*it)->comm != c) {
    return report(c, Errorf(sclInvalidArgument,
                            "win: %p is not a window registered on this communicator", (void*)win));
  }
  *outUserPtr = static_cast<const Window*>(*it)->buff;
  return sclSuccess;
}

sclResult_t sclCommWindowDeregister(sclComm_t comm, sclWindow_t win) {
  if (auto r = api::refused_in_child()) return *r;
  Communicator* c = api::find_comm(comm);
  if (!c) return report(nullptr, api::not_live(comm));
  std::unique_ptr<Window> w;
  {
    std::lock_guard lock(g_windows_mu);
    auto it = windows().find(win);
    if (it == windows().end() || static_cast<const Window*>(*it)->comm != c) {
      return report(
          c, Errorf(sclInvalidArgument, "win: %p is not a window registered on this communicator",
                    (void*)win));
    }
    w.reset(static_cast<Window*>(win));
    windows().erase(it);
  }
  if (w->registration) c->deregister(w->registration);
  return sclSuccess;
}

}  // extern "C"
