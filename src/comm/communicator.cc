#include "comm/communicator.h"

#include <unistd.h>

#include "coll/algorithms.h"
#include "coll/premul.h"
#include "coll/step.h"
#include "hier/hierarchical.h"

namespace stratacl {

Status Communicator::usable(int waiting_on) const {
  if (destroyed_.load(std::memory_order_acquire)) {
    return Errorf(sclInvalidUsage, finalized_.load(std::memory_order_acquire)
                                       ? "the communicator was finalized or destroyed"
                                       : "the communicator was destroyed");
  }
  SCL_TRY(membership_.revoked());
  return heartbeat_ ? heartbeat_->check(waiting_on) : Status::Ok();
}

void Communicator::revoke(const Status& why) {
  membership_.revoke(why);
  if (!heartbeat_) return;
  // Whom the other hosts should blame: the rank the heartbeat lost, else the local rank this
  // error names, else us.
  int culprit = heartbeat_->culprit();
  if (culprit < 0 && why.culprit() >= 0 && why.culprit() < ctx_.nranks) {
    culprit = rail_->topology().world_of(rail_->topology().host, why.culprit());
  }
  heartbeat_->fail(net::Heartbeat::State::kFailed, culprit >= 0 ? culprit : world_rank_,
                   why.code() == sclInvalidUsage);
}

Status Communicator::finish_call(Status s) {
  // A failed network batch closes the endpoint (net/endpoint.h): whatever the error, nothing
  // more can cross hosts, so the other ranks must learn of it now, not at their deadlines.
  // Nor can calls go on once the heartbeat heard of a failure elsewhere: the ranks of this host
  // learn it from our revocation at once, whatever their own heartbeats say yet.
  if (is_fatal(s) || (!s.ok() && rail_ && rail_->endpoint().closed()) ||
      (!s.ok() && heartbeat_ && heartbeat_->culprit() >= 0)) {
    revoke(s);
  }
  if (!s.ok()) errors_.set_last(s);
  return s;
}

Status Communicator::end_for_refusal(const char* what, sclResult_t why) {
  // Across hosts the peers' rail operations have the shape of a call this rank cannot know:
  // they fail at once through the revocation, naming this rank, rather than pair with its next
  // call.
  revoke(Errorf(sclInvalidUsage,
                "rank %d: its %s was refused for its arguments (%s), which ends a communicator "
                "across hosts",
                world_rank_, what, sclGetErrorString(why))
             .with_culprit(ctx_.rank));
  return Status::Ok();
}

Status Communicator::run(uint32_t ticket, const Call& call) {
  return in_turn(ticket, coll_name(call.coll), [&] {
    if (call.refused != sclSuccess) {
      return rail_ ? end_for_refusal(coll_name(call.coll), call.refused) : run_refused(ctx_, call);
    }
    PremulInput input;  // freed after the call, which every peer has read by then
    Call c;
    SCL_TRY(input.prepare(call, nranks(), &c));
    if (!rail_) return run_collective(ctx_, c);
    SCL_TRY(hier::average_first(c, hier_average_input_, nranks()));
    hier::Context hc = across_hosts();
    return hier::run(hc, c);
  });
}

Status Communicator::run_p2p(uint32_t ticket, std::span<const P2POp> ops) {
  return in_turn(ticket, "send/recv", [&] {
    if (!rail_) return stratacl::run_p2p(ctx_, p2p_, ops);
    for (const P2POp& op : ops)
      if (op.refused != sclSuccess) return end_for_refusal("send or receive", op.refused);
    hier::Context hc = across_hosts();
    return hier::p2p(hc, p2p_, ops);
  });
}

Status Communicator::run_moe(uint32_t ticket, const moe::Call& call) {
  return in_turn(ticket, moe::call_name(call.kind), [&]() -> Status {
    Status s;
    if (!rail_) {
      s = moe::run(ctx_, layout_.moe, call);
    } else {
      hier::Context hc = across_hosts();
      s = hier::run_moe(hc, call);
    }
    // A refused dispatch or combine was reported when it was made (a refused create reports
    // its own error from the step).
    const bool refused = call.refused != sclSuccess && call.kind != moe::Kind::kCreate;
    return refused && !is_fatal(s) ? Status::Ok() : s;
  });
}

void Communicator::skip(uint32_t ticket, bool counted) {
  // Earlier tickets of the group are through, so the turn comes at once; a revoked communicator
  // gives the ticket up instead, which skips it as well. Across hosts the call is still counted:
  // a failure that only some hosts saw (sizes across hosts fail the two ranks involved) would
  // otherwise let this rank's next call pair, unnoticed, with another host's skipped one.
  if (order_.enter(ticket, cfg_.timeout_ms.value, [this] { return usable(); }).ok()) {
    if (counted && rail_) rail_->skip_call();
    order_.leave();
  }
}

void Communicator::revoke_by_user() {
  revoke(Errorf(sclRemoteError, "rank %d revoked the communicator (sclCommRevoke)", rank())
             .with_culprit(ctx_.rank));
}

void Communicator::abort() {
  membership_.abort();
  if (heartbeat_) heartbeat_->fail(net::Heartbeat::State::kAborted, world_rank_);
}

Status Communicator::finalize(uint32_t ticket) {
  // Everything issued before it runs first, queued stream work included (after an abort, it
  // fails at once). Twice the timeout: an earlier call may start its own deadline late.
  Status s = order_.enter(ticket, 2 * cfg_.timeout_ms.value, [] { return Status::Ok(); });
  // Refused (from a callback with our calls queued behind it): nothing changed, and those calls
  // run once the callback returns.
  if (s.code() == sclInvalidUsage) return s;
  const bool again = finalized_.exchange(true, std::memory_order_acq_rel);
  destroyed_.store(true, std::memory_order_release);
  if (s.ok() && again) {  // our blocks are gone already: nothing to leave twice
    order_.leave();
    return Errorf(sclInvalidUsage, "the communicator was finalized already");
  }
  if (!s.ok()) {
    // An earlier call still runs on our blocks: leave them all to it, leaked.
    revoke(s);
    return s;
  }
  Turn turn(order_);
  if (ctx_.nranks == 0) return Status::Ok();
  // Ranks a shrink left out may be alive (excluded, not dead) but will never depart.
  std::vector<bool> left_out(size_t(ctx_.nranks), false);
  for (int p = 0; p < ctx_.nranks && shrunk_away_.size() > 0; ++p) {
    const int w = rail_ ? rail_->topology().world_of(rail_->topology().host, p) : p;
    left_out[size_t(p)] = shrunk_away_.has(w);
  }
  departed_ =
      membership_.depart(*waiter_, live_, ctx_.nranks, ctx_.rank, ctx_.timeout_ms, left_out);
  // A rank the shrink left out that still lives (excluded, or late) may yet read our vote, to
  // learn it was left out: our blocks stay, leaked, rather than be freed under it.
  for (int p = 0; p < ctx_.nranks; ++p) {
    if (left_out[size_t(p)] && !live_.is_dead(p)) departed_ = false;
  }
  if (rail_) rail_->flush();
  if (heartbeat_) heartbeat_->leave();
  release_shared_memory();
  maps_.clear();  // peers' heaps: unmapped once no other communicator needs them
  live_ = Liveness();
  return Status::Ok();
}

void Communicator::destroy() {
  if (finalized_.load(std::memory_order_acquire)) return;
  (void)finalize(order_.take());
}

Status Communicator::set_step_for_testing(uint32_t seq) {
  ctx_.seq = seq;
  ctx_.signal(ctx_.me()->done, seq);
  ctx_.signal(ctx_.me()->arrive, seq);
  // Every rank must be there before anyone runs the next step: a line still at kNoStep would look
  // ahead of `seq` in wrap-around arithmetic. (A rank that moved may have gone on already.)
  const Deadline deadline = Deadline::after_ms(cfg_.timeout_ms.value);
  for (int p = 0; p < ctx_.nranks; ++p) {
    for (;;) {
      const uint32_t at = ctx_.cb(p)->arrive.value.load(std::memory_order_acquire);
      if (at != kNoStep && seq_reached(at, seq)) break;
      if (deadline.expired()) return Errorf(sclTimeout, "rank %d never moved to step %u", p, seq);
      usleep(1000);
    }
  }
  return Status::Ok();
}

Result<void*> Communicator::register_range(void* buff, size_t size) {
  const Status& refusal = cma_.refusal();
  if (!refusal.ok()) {
    return Status(refusal.code(),
                  "peers cannot read registered buffers on this host: " + refusal.message());
  }
  return registrations_.add(buff, size);
}

bool Communicator::deregister(void* handle) { return registrations_.remove(handle); }

}  // namespace stratacl
