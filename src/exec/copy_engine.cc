#include "exec/copy_engine.h"

#include "exec/copy.h"
#include "exec/partition.h"

namespace stratacl {
namespace {
// Pieces smaller than this are not worth an engine's wake-up.
constexpr size_t kMinPieceBytes = 64 << 10;
}  // namespace

void Completion::wait() const {
  for (uint32_t left; (left = pending_.load(std::memory_order_acquire)) != 0;)
    wait_while_equal(pending_, left, policy_, &sleepers_);
}

CopyEngine::CopyEngine(int engines) : engines_(engines < 0 ? 0 : engines) {}

CopyEngine::~CopyEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CopyEngine::submit(const CopyDescriptor& d) {
  if (d.bytes == 0) return;
  const int pieces =
      int(std::min<size_t>(size_t(engines()), std::max<size_t>(1, d.bytes / kMinPieceBytes)));
  d.done->pending_.fetch_add(uint32_t(pieces), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The first descriptor starts the engines: a communicator that never moves much never
    // makes their threads.
    while (int(threads_.size()) < engines_) threads_.emplace_back([this] { loop(); });
    for (int i = 0; i < pieces; ++i) {
      const Range r = partition(d.bytes, 1, pieces, i);
      CopyDescriptor piece = d;
      piece.dst = static_cast<char*>(d.dst) + r.begin;
      piece.src = static_cast<const char*>(d.src) + r.begin;
      piece.bytes = r.size();
      queue_.push_back(piece);
    }
  }
  if (pieces > 1) {
    ready_.notify_all();
  } else {
    ready_.notify_one();
  }
}

void CopyEngine::loop() {
  for (;;) {
    CopyDescriptor d;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      d = queue_.front();
      queue_.pop_front();
    }
    copy_out(d.dst, d.src, d.bytes, d.stream);
    Completion* c = d.done;
    if (c->pending_.fetch_sub(1, std::memory_order_seq_cst) == 1)
      wake_all(c->pending_, c->sleepers_);
  }
}

}  // namespace stratacl
