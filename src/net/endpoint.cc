#include "net/endpoint.h"

#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/deadline.h"

namespace stratacl::net {
namespace {

constexpr int kMaxSleepMs = 10;

Status fabric_error(const char* what, int rc) {
  return Errorf(sclSystemError, "libfabric: %s: %s", what, fi_strerror(-rc));
}

}  // namespace

Result<std::unique_ptr<Endpoint>> Endpoint::open(int64_t spin_ns, bool yield) {
  SCL_ASSIGN_OR_RETURN(InfoPtr info, choose_provider());
  std::unique_ptr<Endpoint> e(new Endpoint());
  e->info_ = std::move(info);
  e->spin_ns_ = spin_ns;
  e->yield_ = yield;
  fi_info* i = e->info_.get();
  int rc = fi_fabric(i->fabric_attr, &e->fabric_, nullptr);
  if (rc) return fabric_error("fi_fabric", rc);
  if ((rc = fi_domain(e->fabric_, i, &e->domain_, nullptr))) return fabric_error("fi_domain", rc);
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_TAGGED;
  cq.wait_obj = FI_WAIT_FD;  // so an idle wait can sleep in poll() on it (see sleep())
  if (fi_cq_open(e->domain_, &cq, &e->cq_, nullptr) != 0 ||
      fi_control(&e->cq_->fid, FI_GETWAIT, &e->wait_fd_) != 0) {
    if (e->cq_) fi_close(&e->cq_->fid);
    e->cq_ = nullptr;
    e->wait_fd_ = -1;
    cq.wait_obj = FI_WAIT_NONE;
    if ((rc = fi_cq_open(e->domain_, &cq, &e->cq_, nullptr))) return fabric_error("fi_cq_open", rc);
  }
  fi_av_attr av{};
  av.type = FI_AV_TABLE;
  if ((rc = fi_av_open(e->domain_, &av, &e->av_, nullptr))) return fabric_error("fi_av_open", rc);
  if ((rc = fi_endpoint(e->domain_, i, &e->ep_, nullptr))) return fabric_error("fi_endpoint", rc);
  if ((rc = fi_ep_bind(e->ep_, &e->av_->fid, 0))) return fabric_error("binding the AV", rc);
  if ((rc = fi_ep_bind(e->ep_, &e->cq_->fid, FI_TRANSMIT | FI_RECV))) {
    return fabric_error("binding the CQ", rc);
  }
  if ((rc = fi_enable(e->ep_))) return fabric_error("fi_enable", rc);
  const int mr_mode = i->domain_attr->mr_mode;
  e->writes_ = (i->caps & FI_RMA) && i->domain_attr->cq_data_size >= sizeof(uint64_t) &&
               i->tx_attr->inject_size >= sizeof(ClearToSend);
  e->regs_ =
      std::make_unique<Registrations>(e->domain_, (mr_mode & FI_MR_ENDPOINT) ? e->ep_ : nullptr,
                                      mr_mode, i->domain_attr->mr_key_size, e->writes_);
  return e;
}

Endpoint::~Endpoint() {
  if (abandoned_) {
    park();
  } else {
    close();
  }
}

void Endpoint::abandon() {
  if (abandoned_) return;
  abandoned_ = true;
  // A provider that writes into memory by itself would still let a peer holding one of our
  // keys write into a user buffer; closing the registrations revokes every key.
  if (writes_ && regs_) regs_->close_all();
}

void Endpoint::park() {
  struct Handles {
    fid_fabric* fabric;
    fid_domain* domain;
    fid_ep* ep;
    fid_av* av;
    fid_cq* cq;
    Registrations* regs;
  };
  static std::mutex mu;
  static auto* parked = new std::vector<Handles>();  // never freed: see abandon()
  std::lock_guard<std::mutex> lock(mu);
  parked->push_back({fabric_, domain_, ep_, av_, cq_, regs_.release()});
  ep_ = nullptr, av_ = nullptr, cq_ = nullptr, domain_ = nullptr, fabric_ = nullptr;
}

void Endpoint::close() {
  // Endpoint first: once it is closed, no transfer can touch a user buffer any more. Then the
  // registrations, before their domain.
  if (ep_) fi_close(&ep_->fid);
  regs_.reset();
  if (av_) fi_close(&av_->fid);
  if (cq_) fi_close(&cq_->fid);
  if (domain_) fi_close(&domain_->fid);
  if (fabric_) fi_close(&fabric_->fid);
  ep_ = nullptr, av_ = nullptr, cq_ = nullptr, domain_ = nullptr, fabric_ = nullptr;
}

std::vector<uint8_t> Endpoint::name() const {
  std::vector<uint8_t> out(256);
  size_t len = out.size();
  if (!ep_ || fi_getname(&ep_->fid, out.data(), &len) != 0) return {};
  out.resize(len);
  return out;
}

Status Endpoint::connect(const std::vector<std::vector<uint8_t>>& names, int self) {
  if (names.size() >= (size_t(1) << kPeerBits)) {
    return Errorf(sclInvalidUsage, "network: %zu peers, at most %d", names.size(),
                  (1 << kPeerBits) - 1);
  }
  self_ = self;
  peers_.assign(names.size(), FI_ADDR_UNSPEC);
  for (size_t p = 0; p < names.size(); ++p) {
    if (names[p].empty() || fi_av_insert(av_, names[p].data(), 1, &peers_[p], 0, nullptr) != 1) {
      return Errorf(sclRemoteError, "network: the address of peer %zu is not valid for %s", p,
                    info_->fabric_attr->prov_name);
    }
  }
  return Status::Ok();
}

Result<int> Endpoint::add_peer(const std::vector<uint8_t>& name) {
  const auto known = std::find(names_.begin(), names_.end(), name);
  if (known != names_.end()) return int(known - names_.begin());
  fi_addr_t addr = FI_ADDR_UNSPEC;
  if (name.empty() || fi_av_insert(av_, name.data(), 1, &addr, 0, nullptr) != 1) {
    return Errorf(sclRemoteError, "network: a peer's address is not valid for %s",
                  info_->fabric_attr->prov_name);
  }
  names_.push_back(name);
  peers_.push_back(addr);
  return int(peers_.size() - 1);
}

ssize_t Endpoint::post(Transfer& t) {
  if (t.one_sided) return post_one_sided(t);
  static char empty;
  const size_t bytes = t.send && (t.tag & kFailedTag) ? 0 : t.bytes;  // a failed call's: empty
  void* buf = bytes ? t.buf : &empty;
  const uint64_t tag = wire_tag(t.tag, t.rank >= 0 ? t.rank : t.send ? self_ : t.peer);
  const fi_addr_t peer = peers_[size_t(t.peer)];
  if (t.header) return post_with_header(t, bytes, tag, peer);
  if (t.send && bytes <= info_->tx_attr->inject_size) {
    // Small enough to be copied out at once: done on return, no completion to wait for.
    const ssize_t rc = fi_tinject(ep_, buf, bytes, peer, tag);
    t.done = rc == 0;
    return rc;
  }
  return t.send ? fi_tsend(ep_, buf, bytes, t.desc, peer, tag, &t.ctx)
                : fi_trecv(ep_, buf, bytes, t.desc, peer, tag, t.ignore << kPeerBits, &t.ctx);
}

ssize_t Endpoint::post_with_header(Transfer& t, size_t bytes, uint64_t tag, fi_addr_t peer) {
  constexpr size_t kHeader = sizeof(uint64_t);
  if (t.send && kHeader + bytes <= info_->tx_attr->inject_size) {
    // Small: header and data copied into one message and injected, as a plain small send is.
    std::vector<char> both(kHeader + bytes);
    std::memcpy(both.data(), t.header, kHeader);
    if (bytes) std::memcpy(both.data() + kHeader, t.buf, bytes);
    const ssize_t rc = fi_tinject(ep_, both.data(), both.size(), peer, tag);
    t.done = rc == 0;
    return rc;
  }
  iovec iov[2] = {{t.header, kHeader}, {t.buf, bytes}};
  void* desc[2] = {t.header_desc, t.desc};
  const size_t parts = bytes ? 2 : 1;
  return t.send ? fi_tsendv(ep_, iov, desc, parts, peer, tag, &t.ctx)
                : fi_trecvv(ep_, iov, desc, parts, peer, tag, t.ignore << kPeerBits, &t.ctx);
}

bool Endpoint::signal(int peer, uint64_t tag, int rank) {
  static char empty;
  return !closed() && fi_tinject(ep_, &empty, 0, peers_[size_t(peer)],
                                 wire_tag(tag, rank >= 0 ? rank : self_)) == 0;
}

void Endpoint::cancel(Transfer& t) {
  if (!closed()) fi_cancel(&ep_->fid, &t.ctx);
}

Status Endpoint::listen(Transfer& t) {
  if (closed()) return Errorf(sclRemoteError, "network: the endpoint is closed");
  t.send = false, t.bytes = 0, t.desc = nullptr, t.done = false, t.failed = false;
  const ssize_t rc = post(t);
  return rc == 0 ? Status::Ok() : fabric_error("posting a receive", int(rc));
}

Status Endpoint::post_async(Transfer& t) {
  if (closed()) return Errorf(sclRemoteError, "network: the endpoint is closed");
  t.done = false, t.failed = false;
  SCL_ASSIGN_OR_RETURN(t.desc, regs_->desc(t.buf, t.bytes));
  const ssize_t rc = post(t);
  return rc == 0 ? Status::Ok()
                 : fabric_error(t.send ? "posting a send" : "posting a receive", int(rc));
}

bool Endpoint::read_async() {
  fi_cq_tagged_entry entries[16];
  const ssize_t n = fi_cq_read(cq_, entries, 16);
  for (ssize_t k = 0; k < n; ++k) {
    auto* t = static_cast<Transfer*>(entries[k].op_context);
    if (!t) continue;  // no transfer of ours (the heartbeat's endpoint is written by nobody)
    t->tag = entries[k].tag >> kPeerBits;
    if (!t->send) t->bytes = entries[k].len;
    t->done = true;
  }
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    // An injected send that failed has no transfer to tell.
    if (auto* t = static_cast<Transfer*>(err.op_context)) t->done = t->failed = true;
  }
  return n != -FI_EAGAIN;
}

void Endpoint::poll(int ms, int wake_fd) {
  if (closed() || read_async()) return;
  sleep(ms, wake_fd);
  read_async();  // what woke us, so the caller sees it now
}

void Endpoint::flush(int64_t ns) {
  for (const int64_t until = now_ns() + ns; !closed() && now_ns() < until;) {
    fi_cq_tagged_entry entries[16];
    if (fi_cq_read(cq_, entries, 16) == -FI_EAGAIN) sched_yield();
  }
}

void Endpoint::sleep(int ms, int wake_fd) {
  // fi_trywait says whether nothing is pending that only a progress call would reveal; only
  // then may we sleep on the descriptor. Without a descriptor, a short nap.
  if (wait_fd_ >= 0) {
    fid* fids[1] = {&cq_->fid};
    if (fi_trywait(fabric_, fids, 1) != FI_SUCCESS) return;
    pollfd p[2] = {{wait_fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    ::poll(p, wake_fd >= 0 ? 2 : 1, ms);
    return;
  }
  // No descriptor to sleep on: the data path naps briefly; the heartbeat (which passes wake_fd)
  // naps longer, as its peers' beats may wait a few milliseconds.
  if (wake_fd >= 0) {
    pollfd p{wake_fd, POLLIN, 0};
    ::poll(&p, 1, std::min(ms, 10));
    return;
  }
  timespec ts{0, 50000};
  nanosleep(&ts, nullptr);
}

uint64_t Endpoint::expected_tag(const Transfer& t) {
  if (!t.one_sided) return t.tag;
  return t.tag | (t.send ? kClearToSendTag : kNoticeTag);
}

uint64_t Endpoint::ignored_bits(const Transfer& t) {
  if (!t.one_sided) return t.ignore;
  // A clear-to-send is only ever one; a notice's receive may also meet a message of data (which
  // is then another call's), but never a clear-to-send.
  return t.ignore & ~(t.send ? kKindTags : kClearToSendTag);
}

bool Endpoint::receiving(const Transfer& t) {
  return !t.send || t.stage == Transfer::kAwaitingClearToSend;
}

bool Endpoint::another_call(const Transfer& t, uint64_t theirs) const {
  // Either end's call may have failed (kFailedTag), with arguments of its own.
  const uint64_t ours = expected_tag(t);
  const uint64_t excused = kFailedTag | ((theirs | ours) & kFailedTag ? excused_ : 0);
  return receiving(t) && ((theirs ^ ours) & ignored_bits(t) & ~excused) != 0;
}

Status Endpoint::another_call_error(const Transfer& t, uint64_t theirs, const PeerName& who) const {
  return Errorf(sclInvalidUsage, "%s %s", who(t.peer).c_str(),
                mismatch_ ? mismatch_(theirs, t.tag).c_str() : "is in another call");
}

Status Endpoint::reap(std::span<Transfer> batch, const PeerName& who, size_t* finished,
                      size_t* events, Status* sizes) {
  fi_cq_tagged_entry entries[16];
  const ssize_t n = fi_cq_read(cq_, entries, 16);
  if (n > 0) {
    *events += size_t(n);
    for (ssize_t k = 0; k < n; ++k) {
      auto* t = static_cast<Transfer*>(entries[k].op_context);
      const uint64_t theirs = entries[k].tag >> kPeerBits;
      if (t && another_call(*t, theirs)) return another_call_error(*t, theirs, who);
      if (!t || t->one_sided) {
        SCL_TRY(one_sided_step(entries[k], batch, who, finished));
        continue;
      }
      const size_t header = t->header ? sizeof(uint64_t) : 0, len = size_t(entries[k].len);
      if (!t->send && (theirs & kFailedTag)) {
        t->peer_failed = true;
      } else if (!t->send && !(t->tag & kFailedTag) && len != header + t->bytes && sizes->ok()) {
        *sizes = Errorf(sclInvalidUsage, "%s sent %zu bytes where this rank expects %zu",
                        who(t->peer).c_str(), len - std::min(len, header), t->bytes);
      }
      t->done = true;
      ++*finished;
    }
    return Status::Ok();
  }
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(cq_, &err, 0);
    auto* t = static_cast<Transfer*>(err.op_context);
    const uint64_t theirs = err.tag >> kPeerBits;
    // Larger than the receive: perhaps a message of another call.
    if (t && err.err == FI_ETRUNC && another_call(*t, theirs)) {
      return another_call_error(*t, theirs, who);
    }
    // Larger than the receive, from this call: a mismatch, but over tcp the provider does not
    // survive a truncated message (the connection breaks), so the endpoint cannot go on.
    if (t && err.err == FI_ETRUNC && !t->send && !t->one_sided) {
      return Errorf(sclInvalidUsage, "%s sent more than the %zu bytes this rank expects",
                    who(t->peer).c_str(), t->bytes);
    }
    const std::string peer = t ? who(t->peer) : std::string("a peer");
    return Errorf(sclRemoteError, "network error %s %s: %s", t && t->send ? "sending to" : "with",
                  peer.c_str(), fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0));
  }
  if (n < 0 && n != -FI_EAGAIN) return fabric_error("reading completions", int(n));
  return Status::Ok();
}

Status Endpoint::run(std::span<Transfer> batch, const Deadline& deadline, const StopCheck& stop,
                     const PeerName& who) {
  if (closed()) {
    return Errorf(sclRemoteError, "network: the endpoint was closed after an earlier failure");
  }
  size_t finished = 0, posted = 0;
  int64_t idle_since = now_ns();
  Status s;
  for (Transfer& t : batch) {
    t.stage = Transfer::kStart;
    t.heard = t.landed = t.peer_failed = false;
    // A one-sided receiver's buffer is written by the peer: it needs the key, not a descriptor.
    const bool written = t.one_sided && !t.send;
    Result<void*> d = written ? nullptr : regs_->desc(t.buf, t.bytes);
    s = d.ok() ? Status::Ok() : d.status();
    if (s.ok() && t.header) {
      Result<void*> hd = regs_->desc(t.header, sizeof *t.header);
      s = hd.ok() ? Status::Ok() : hd.status();
      if (s.ok()) t.header_desc = *hd;
    }
    if (s.ok() && t.one_sided) s = prepare_one_sided(t);
    if (!s.ok()) break;
    t.desc = *d;
  }
  size_t writes = 0, events = 0;
  Status sizes;  // a message of another size than its receive: completed, reported at the end
  while (s.ok() && finished < batch.size()) {
    // Progress: something posted, or a completion read (every finish is one of the two).
    const size_t posted_before = posted + writes, events_before = events;
    // Post what is not posted yet; a full queue (-FI_EAGAIN) drains by reaping below.
    while (posted < batch.size()) {
      batch[posted].done = false;
      const ssize_t rc = post(batch[posted]);
      if (rc == -FI_EAGAIN) break;
      if (rc != 0) {
        s = fabric_error(batch[posted].send ? "posting a send" : "posting a receive", int(rc));
        break;
      }
      finished += batch[posted].done;  // an injected send
      ++posted;
    }
    if (!s.ok()) break;
    s = reap(batch, who, &finished, &events, &sizes);
    if (s.ok()) s = post_writes(batch, who, &writes);  // those whose clear-to-send just came
    if (!s.ok()) break;
    if (posted + writes != posted_before || events != events_before) {
      idle_since = now_ns();
      continue;
    }
    if (deadline.expired()) {
      const Transfer* late = nullptr;
      for (size_t k = 0; k < posted && !late; ++k) late = batch[k].done ? nullptr : &batch[k];
      s = Errorf(sclTimeout, "timed out %s %s over the network",
                 late && late->send ? "sending to" : "waiting for",
                 late ? who(late->peer).c_str() : "a peer");
    } else {
      // A peer that left can still be the one a send waits for (its completion can trail the
      // peer's receive); only a receive surely waits in vain.
      const Transfer* unheard = nullptr;
      for (size_t k = 0; k < posted && !unheard; ++k) {
        if (!batch[k].done && receiving(batch[k])) unheard = &batch[k];
      }
      s = stop(unheard ? unheard->peer : -1);
    }
    if (s.ok() && now_ns() - idle_since > spin_ns_) {
      sleep(std::clamp(deadline.remaining_ms(), 1, kMaxSleepMs));
    } else if (s.ok() && yield_) {
      sched_yield();
    }
  }
  regs_->end_batch();
  if (!s.ok()) abandon();     // receives may still be posted into user buffers
  return s.ok() ? sizes : s;  // every transfer done: a size mismatch leaves the endpoint usable
}

}  // namespace stratacl::net
