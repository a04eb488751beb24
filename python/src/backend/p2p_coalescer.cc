#include "backend/p2p_coalescer.h"

#include <algorithm>
#include <utility>

namespace stratacl_torch {
namespace {

// Every live coalescer of the process, so any call can flush them all first.
std::mutex g_registry_mu;
std::vector<P2PCoalescer*> g_registry;  // under g_registry_mu

}  // namespace

P2PCoalescer::P2PCoalescer(sclStream_t stream) : stream_(stream) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_registry.push_back(this);
}

P2PCoalescer::~P2PCoalescer() { close(); }

void P2PCoalescer::close() {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_registry.erase(std::remove(g_registry.begin(), g_registry.end(), this), g_registry.end());
}

void P2PCoalescer::hold(const c10::intrusive_ptr<Work>& work, Issue issue) {
  work->before_wait([] { flush_all(); });
  held_.push_back(Held{work, std::move(issue)});
}

void P2PCoalescer::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_locked();
}

void P2PCoalescer::flush_locked() {
  if (held_.empty()) return;
  std::vector<Held> held = std::move(held_);
  held_.clear();
  std::vector<c10::intrusive_ptr<Work>> works;
  for (const Held& h : held) works.push_back(h.work);
  try {
    for (const Held& h : held) h.work->stage_in_after(stream_);
  } catch (...) {
    // The stream refused a callback (it is gone): nothing of the group was issued.
    for (const c10::intrusive_ptr<Work>& w : works) w->complete(sclInvalidUsage);
    throw;
  }
  sclResult_t r = sclGroupStart();
  for (const Held& h : held) {
    const sclResult_t issued = h.issue(stream_);
    if (r == sclSuccess) r = issued;
  }
  const sclResult_t end = sclGroupEnd();
  if (r == sclSuccess) r = end;
  // A call refused when issued (rare: they were checked when held) fails every Work of the
  // group, but only once the calls that were queued have run, as they use the Works' tensors.
  Work::complete_all_after(stream_, std::move(works), r);
}

void P2PCoalescer::flush_all(const P2PCoalescer* except) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (P2PCoalescer* c : g_registry)
    if (c != except) c->flush();
}

}  // namespace stratacl_torch
