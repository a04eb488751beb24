#include "net/heartbeat_hub.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "core/deadline.h"
#include "net/heartbeat.h"

namespace stratacl::net {
namespace {

// How long a parted session's receives stay posted: beats its peers sent before they heard its
// goodbye (they answer it within a poll) land in them, and are dropped.
constexpr int64_t kLingerNs = 200 * 1000 * 1000;
// How long a cancelled receive may take to report its cancellation.
constexpr int64_t kCancelNs = 1000 * 1000 * 1000;
constexpr int kMaxSleepMs = 1000;
// How long the provider is driven before the endpoint closes: injected goodbyes have no
// completions, and may still be queued.
constexpr int64_t kFlushNs = 20 * 1000 * 1000;

}  // namespace

struct HeartbeatHub::Linger {
  std::unique_ptr<Heartbeat::Lines> lines;
  uint64_t nonce = 0;
  int64_t until = 0;    // when its receives are cancelled
  int64_t give_up = 0;  // set at the cancellation: when it is kept for good instead
};

void HeartbeatHub::keep_forever(std::unique_ptr<Linger> l) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::unique_ptr<Linger>>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  kept->push_back(std::move(l));
}

Result<std::shared_ptr<HeartbeatHub>> HeartbeatHub::shared() {
  static std::mutex mu;
  static auto* hub = new std::weak_ptr<HeartbeatHub>();  // never freed: threads may outlive exit
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<HeartbeatHub> h = hub->lock();
  if (h && !h->forked()) return h;
  SCL_ASSIGN_OR_RETURN(h, open());
  *hub = h;
  return h;
}

Result<std::shared_ptr<HeartbeatHub>> HeartbeatHub::open() {
  SCL_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep, Endpoint::open(0, false));
  std::shared_ptr<HeartbeatHub> h(new HeartbeatHub());
  h->name_ = ep->name();
  h->ep_ = std::move(ep);
  h->pid_ = getpid();
  h->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (h->wake_fd_ < 0) return SystemErrorf("heartbeat: eventfd");
  h->thread_ = std::jthread([hub = h.get()] { hub->loop(); });
  return h;
}

HeartbeatHub::~HeartbeatHub() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake();
    thread_.join();
  }
  if (ep_) ep_->flush(kFlushNs);  // the last goodbyes (or failures) leave before the close
  if (ep_ && lost_any_) {
    // Beats may be stuck on a cut link: see Endpoint::abandon(). Nothing it posted is freed.
    ep_->abandon();
    for (auto& l : lingers_) {
      if (!l->lines->settled()) keep_forever(std::move(l));
    }
  }
  ep_.reset();  // before the lingering receives, which its posted ones point into
  lingers_.clear();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool HeartbeatHub::forked() const { return pid_ != getpid(); }

bool HeartbeatHub::nonce_taken(uint64_t nonce) {
  std::lock_guard<std::mutex> lock(mu_);
  return nonces_.count(nonce) != 0;
}

void HeartbeatHub::wake() const {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

Status HeartbeatHub::join(Heartbeat* hb, const std::vector<std::vector<uint8_t>>& names) {
  Request r{hb, &names, Status::Ok()};
  std::unique_lock<std::mutex> lock(mu_);
  nonces_.insert(hb->nonce_);
  requests_.push_back(&r);
  wake();
  answered_.wait(lock, [&] { return r.done; });
  return r.result;
}

void HeartbeatHub::part(Heartbeat* hb) {
  Request r{hb, nullptr, Status::Ok()};
  std::unique_lock<std::mutex> lock(mu_);
  requests_.push_back(&r);
  wake();
  answered_.wait(lock, [&] { return r.done; });
}

void HeartbeatHub::take_requests() {
  std::vector<Request*> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(requests_);
  }
  for (Request* r : taken) {
    Heartbeat* hb = r->hb;
    if (r->names) {
      std::vector<int> routes;
      for (int w : hb->watched_) {
        Result<int> route = w >= 0 && size_t(w) < r->names->size()
                                ? ep_->add_peer((*r->names)[size_t(w)])
                                : Result<int>(Errorf(sclInternalError, "heartbeat: no rank %d", w));
        if (!route.ok()) {
          r->result = route.status();
          break;
        }
        routes.push_back(*route);
      }
      if (r->result.ok()) {
        hb->set_routes(std::move(routes));
        sessions_.push_back(hb);
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        nonces_.erase(nonces_.find(hb->nonce_));
      }
    } else if (std::erase(sessions_, hb) != 0) {
      lost_any_ = lost_any_ || hb->lost();
      auto l = std::make_unique<Linger>();
      l->lines = hb->finish(*ep_);
      l->nonce = hb->nonce_;
      l->until = now_ns() + kLingerNs;
      lingers_.push_back(std::move(l));
    }
    std::lock_guard<std::mutex> lock(mu_);
    r->done = true;
    answered_.notify_all();
  }
}

void HeartbeatHub::serve_lingers(int64_t now) {
  for (auto& l : lingers_) {
    if (l->give_up == 0 && now < l->until) {
      l->lines->relisten(*ep_);
    } else if (l->give_up == 0) {
      l->lines->cancel(*ep_);
      l->give_up = now + kCancelNs;
    }
  }
  // A receive whose cancellation never came (a provider that cannot cancel, a send stuck on a
  // cut link) may still be written: its lines are kept for the process's life.
  std::erase_if(lingers_, [&](std::unique_ptr<Linger>& l) {
    if (l->give_up == 0 || (!l->lines->settled() && now < l->give_up)) return false;
    if (!l->lines->settled()) {
      // Its receives may still be posted: its nonce stays taken too.
      keep_forever(std::move(l));
      return true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    nonces_.erase(nonces_.find(l->nonce));
    return true;
  });
}

void HeartbeatHub::loop() {
  for (;;) {
    take_requests();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && requests_.empty()) break;
    }
    const int64_t before = now_ns();
    int64_t next = before + int64_t(kMaxSleepMs) * 1000000;
    for (Heartbeat* hb : sessions_) next = std::min(next, hb->prepare(*ep_, before));
    if (!lingers_.empty()) next = std::min(next, before + 10 * 1000000);
    const int64_t asked_ms = std::clamp<int64_t>((next - before) / 1000000, 1, kMaxSleepMs);
    ep_->poll(int(asked_ms), wake_fd_);
    uint64_t drained;
    (void)!read(wake_fd_, &drained, sizeof drained);
    const int64_t now = now_ns();
    for (Heartbeat* hb : sessions_) hb->collect(now, now - before - asked_ms * 1000000);
    serve_lingers(now);
  }
}

}  // namespace stratacl::net
