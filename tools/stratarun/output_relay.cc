#include "output_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace stratacl::run {
namespace {

// Bytes read from a pipe per read() call.
constexpr size_t kReadChunk = 64 * 1024;

// A line longer than this is emitted in pieces (each piece tagged and newline-terminated),
// so that a rank printing without newlines cannot make the relay buffer without bound.
constexpr size_t kMaxLine = 64 * 1024;

// At shutdown, at most this many reads per stream: bounds the drain if a rank left behind a
// background process that keeps writing into the inherited pipe.
constexpr int kMaxDrainReads = 64;

}  // namespace

std::mutex& stderr_mutex() {
  static std::mutex mutex;
  return mutex;
}

const char* errno_text(int error) noexcept {
  const char* text = strerrordesc_np(error);
  return text != nullptr ? text : "Unknown error";
}

void say(std::string_view message) noexcept {
  // Build the line in a fixed buffer: one write keeps it whole, and no allocation means this
  // works on every error path.
  static constexpr std::string_view kTag = "stratarun: ";
  char line[1024];
  const size_t body = std::min(message.size(), sizeof(line) - kTag.size() - 1);
  std::memcpy(line, kTag.data(), kTag.size());
  std::memcpy(line + kTag.size(), message.data(), body);
  line[kTag.size() + body] = '\n';
  const std::lock_guard<std::mutex> lock(stderr_mutex());
  // Nothing sensible is left to do if stderr itself is broken.
  (void)write_all(STDERR_FILENO, std::string_view(line, kTag.size() + body + 1));
}

void say_errno(std::string_view what) noexcept {
  const int error = errno;
  char message[512];
  const int n = std::snprintf(message, sizeof(message), "%.*s: %s", static_cast<int>(what.size()),
                              what.data(), errno_text(error));
  say(std::string_view(message, n < 0 ? 0 : std::min<size_t>(n, sizeof(message) - 1)));
  errno = error;
}

bool write_all(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    // Our stdout/stderr may be a non-blocking fd shared with another process; wait for room
    // instead of spinning or dropping output.
    pollfd pfd{fd, POLLOUT, 0};
    if (poll(&pfd, 1, -1) < 0 && errno != EINTR) return false;
  }
  return true;
}

OutputRelay::OutputRelay(int world_size)
    : streams_(2 * static_cast<size_t>(world_size)), read_buffer_(kReadChunk) {
  for (int rank = 0; rank < world_size; ++rank) {
    std::string prefix = "[";
    prefix.append(std::to_string(rank)).append("] ");
    streams_[2 * rank].prefix = prefix;
    streams_[2 * rank].target_fd = STDOUT_FILENO;
    streams_[2 * rank + 1].prefix = prefix;
    streams_[2 * rank + 1].target_fd = STDERR_FILENO;
  }
}

OutputRelay::~OutputRelay() { finish(); }

bool OutputRelay::create_pipes(int rank) {
  for (Stream* stream : {&streams_[2 * rank], &streams_[2 * rank + 1]}) {
    int fds[2];
    // O_CLOEXEC so that no other rank inherits this rank's pipes.
    if (pipe2(fds, O_CLOEXEC) != 0) {
      say_errno("pipe2");
      return false;
    }
    stream->read_end.reset(fds[0]);
    stream->write_end.reset(fds[1]);
    // Only our read end is non-blocking (the flag lives in the open file description, so
    // setting it on the write end would hand the rank a non-blocking stdout).
    const int flags = fcntl(fds[0], F_GETFL);
    if (flags < 0 || fcntl(fds[0], F_SETFL, flags | O_NONBLOCK) != 0) {
      say_errno("fcntl(O_NONBLOCK)");
      return false;
    }
  }
  return true;
}

bool OutputRelay::redirect_in_child(int rank) const noexcept {
  // dup2 clears FD_CLOEXEC on the new fd, so fds 1 and 2 survive exec while the originals
  // (still close-on-exec) disappear. Fds 0-2 are always open in stratarun, so the pipe ends are
  // never 1 or 2 themselves and dup2 never degenerates into a no-op.
  return dup2(streams_[2 * rank].write_end.get(), STDOUT_FILENO) >= 0 &&
         dup2(streams_[2 * rank + 1].write_end.get(), STDERR_FILENO) >= 0;
}

void OutputRelay::close_child_ends(int rank) {
  streams_[2 * rank].write_end.reset();
  streams_[2 * rank + 1].write_end.reset();
}

bool OutputRelay::start() {
  stop_event_.reset(eventfd(0, EFD_CLOEXEC));
  if (!stop_event_.valid()) {
    say_errno("eventfd");
    return false;
  }
  try {
    thread_ = std::thread(&OutputRelay::loop, this);
  } catch (const std::system_error& error) {
    say(std::string("cannot start the output relay thread: ") + error.what());
    return false;
  }
  return true;
}

void OutputRelay::finish() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  if (write(stop_event_.get(), &one, sizeof(one)) != sizeof(one)) {
    // Without the stop event the thread would wait for EOF forever; it cannot happen with an
    // eventfd, but do not hang silently if it does.
    say_errno("write(eventfd)");
    return;
  }
  thread_.join();
}

void OutputRelay::loop() {
  std::vector<pollfd> pfds;
  std::vector<Stream*> polled;
  for (;;) {
    pfds.assign(1, pollfd{stop_event_.get(), POLLIN, 0});
    polled.clear();
    for (Stream& stream : streams_) {
      if (!stream.read_end.valid()) continue;
      pfds.push_back(pollfd{stream.read_end.get(), POLLIN, 0});
      polled.push_back(&stream);
    }
    // All pipes at EOF: nothing can arrive any more, so no need to wait for the stop event.
    if (polled.empty()) return;

    if (poll(pfds.data(), pfds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      say_errno("poll (output relay)");
      // Closing the read ends makes the ranks fail on write (EPIPE) instead of hanging on
      // full pipes that nobody reads any more.
      drain_and_close_all();
      return;
    }
    if (pfds[0].revents != 0) {
      drain_and_close_all();
      return;
    }
    for (size_t i = 0; i < polled.size(); ++i) {
      if (pfds[i + 1].revents == 0) continue;
      // One read per wakeup keeps a chatty rank from starving the others.
      if (read_once(*polled[i]) == ReadResult::kEof) close_stream(*polled[i]);
    }
  }
}

void OutputRelay::drain_and_close_all() {
  for (Stream& stream : streams_) {
    if (!stream.read_end.valid()) continue;
    // The ranks are gone, so everything they wrote is already in the pipe. Stop at EAGAIN:
    // a leftover background process may keep the write end open indefinitely.
    for (int i = 0; i < kMaxDrainReads && read_once(stream) == ReadResult::kData; ++i) {
    }
    close_stream(stream);
  }
}

OutputRelay::ReadResult OutputRelay::read_once(Stream& stream) {
  for (;;) {
    const ssize_t n = read(stream.read_end.get(), read_buffer_.data(), read_buffer_.size());
    if (n > 0) {
      consume(stream, std::string_view(read_buffer_.data(), static_cast<size_t>(n)));
      return ReadResult::kData;
    }
    if (n == 0) return ReadResult::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadResult::kWouldBlock;
    say_errno("read (output relay)");
    return ReadResult::kEof;
  }
}

void OutputRelay::close_stream(Stream& stream) {
  // A last line without a trailing newline still gets its tag, and a newline so that the
  // next rank's line starts on a line of its own.
  if (!stream.pending.empty()) {
    std::string line = stream.prefix;
    line += stream.pending;
    line += '\n';
    stream.pending.clear();
    emit(stream.target_fd, line);
  }
  stream.read_end.reset();
}

void OutputRelay::consume(Stream& stream, std::string_view data) {
  // Collect all complete lines of this chunk into one buffer and write it with one call:
  // fewer syscalls, and each line stays whole because we are the only writer of our output.
  std::string out;
  for (size_t newline; (newline = data.find('\n')) != std::string_view::npos;) {
    out += stream.prefix;
    out += stream.pending;
    out.append(data.data(), newline + 1);
    stream.pending.clear();
    data.remove_prefix(newline + 1);
  }
  stream.pending.append(data.data(), data.size());
  if (stream.pending.size() >= kMaxLine) {
    out += stream.prefix;
    out += stream.pending;
    out += '\n';
    stream.pending.clear();
  }
  if (!out.empty()) emit(stream.target_fd, out);
}

void OutputRelay::emit(int target_fd, std::string_view text) {
  if (target_fd == STDOUT_FILENO) {
    if (stdout_broken_) return;
    if (!write_all(STDOUT_FILENO, text)) {
      // Keep draining the pipes (so the ranks do not block), but drop their stdout from now
      // on; typically the reader of our stdout went away (EPIPE).
      stdout_broken_ = true;
      say_errno("write to stdout");
    }
    return;
  }
  if (stderr_broken_) return;
  const std::lock_guard<std::mutex> lock(stderr_mutex());
  if (!write_all(STDERR_FILENO, text)) stderr_broken_ = true;
}

}  // namespace stratacl::run
