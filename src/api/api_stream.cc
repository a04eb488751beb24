// C entry points: streams and groups.
#include "api/handles.h"
#include "api/submit.h"

using namespace stratacl;
using stratacl::api::report;

namespace {

// From one of the stream's own callbacks: the wait would include that callback.
Status waits_for_itself(sclStream_t stream) {
  return Errorf(sclInvalidUsage,
                "stream: %p: called from one of its own callbacks, which it would wait for",
                (void*)stream);
}

}  // namespace

extern "C" {

sclResult_t sclStreamCreate(sclStream_t* stream) {
  if (auto r = api::refused_in_child()) return *r;
  if (!stream) return report(nullptr, Errorf(sclInvalidArgument, "stream: NULL output pointer"));
  auto* s = new Stream();
  api::register_stream(s);
  *stream = s;
  return sclSuccess;
}

sclResult_t sclStreamDestroy(sclStream_t stream) {
  if (auto r = api::refused_in_child()) return *r;
  Stream* s = api::find_stream(stream);
  if (!s)
    return report(nullptr,
                  Errorf(sclInvalidArgument, "stream: %p is not a live stream", (void*)stream));
  if (s->own_thread()) return report(nullptr, waits_for_itself(stream));
  api::unregister_stream(s);
  delete s;  // drains queued work first
  return sclSuccess;
}

sclResult_t sclStreamSynchronize(sclStream_t stream) {
  if (auto r = api::refused_in_child()) return *r;
  if (!stream) return sclSuccess;  // the NULL stream never has pending work
  Stream* s = api::find_stream(stream);
  if (!s)
    return report(nullptr,
                  Errorf(sclInvalidArgument, "stream: %p is not a live stream", (void*)stream));
  if (s->own_thread()) return report(nullptr, waits_for_itself(stream));
  return report(nullptr, s->synchronize());
}

sclResult_t sclStreamQuery(sclStream_t stream) {
  if (auto r = api::refused_in_child()) return *r;
  if (!stream) return sclSuccess;
  Stream* s = api::find_stream(stream);
  if (!s)
    return report(nullptr,
                  Errorf(sclInvalidArgument, "stream: %p is not a live stream", (void*)stream));
  if (!s->idle()) return sclInProgress;
  return report(nullptr, s->pending_error());
}

sclResult_t sclStreamAddCallback(sclStream_t stream, sclStreamCallback_t callback, void* userData) {
  if (auto r = api::refused_in_child()) return *r;
  if (!callback) return report(nullptr, Errorf(sclInvalidArgument, "callback: NULL function"));
  if (!stream) {
    callback(stream, sclSuccess, userData);
    return sclSuccess;
  }
  Stream* s = api::find_stream(stream);
  if (!s)
    return report(nullptr,
                  Errorf(sclInvalidArgument, "stream: %p is not a live stream", (void*)stream));
  // The job runs after every earlier one: the first error since the previous callback covers
  // the calls queued between the two.
  s->enqueue([s, stream, callback, userData] {
    callback(stream, s->take_error_since_mark().code(), userData);
    return Status::Ok();
  });
  return sclSuccess;
}

sclResult_t sclGroupStart(void) {
  if (auto r = api::refused_in_child()) return *r;
  return api::group_start();
}
sclResult_t sclGroupEnd(void) {
  if (auto r = api::refused_in_child()) return *r;
  return api::group_end();
}

}  // extern "C"
