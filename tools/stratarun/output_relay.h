// stratarun's --tag-output relay, plus the small I/O helpers the whole launcher shares.
//
// This is the lowest-level file of the tool (the launcher depends on it, not the other way
// round), so the diagnostic writers live here too. File descriptors are owned by
// stratacl::UniqueFd (src/core/unique_fd.h, header-only: stratarun does not link the library).

#ifndef STRATACL_TOOLS_STRATARUN_OUTPUT_RELAY_H_
#define STRATACL_TOOLS_STRATARUN_OUTPUT_RELAY_H_

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/unique_fd.h"

namespace stratacl::run {

// Serialises everything stratarun writes to its stderr: the supervisor's diagnostics and the
// relay thread's tagged stderr lines must never interleave inside a line.
std::mutex& stderr_mutex();

// Writes "stratarun: <message>\n" to stderr in one write. Never allocates, so it is safe in
// destructors and on out-of-memory paths.
void say(std::string_view message) noexcept;

// Writes "stratarun: <what>: <description of errno>\n" to stderr.
void say_errno(std::string_view what) noexcept;

// Thread-safe description of an errno value (strerror is not thread-safe).
const char* errno_text(int error) noexcept;

// Writes all of `data` to `fd`, retrying on EINTR and short writes and waiting for
// writability if the fd happens to be non-blocking. Returns false (errno set) on failure.
bool write_all(int fd, std::string_view data) noexcept;

// Relays every rank's stdout and stderr through pipes, prefixing each line with "[rank] ".
//
// Usage: create_pipes(r) before forking rank r, redirect_in_child(r) in the child,
// close_child_ends(r) in the parent after the fork, start() once all ranks are forked, and
// finish() once every rank has been reaped.
class OutputRelay {
 public:
  explicit OutputRelay(int world_size);
  ~OutputRelay();
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;

  // Creates the stdout and stderr pipes of `rank`. Prints the reason and returns false on
  // failure.
  bool create_pipes(int rank);

  // Runs in the forked child: makes the rank's pipe write ends its fds 1 and 2. Only uses
  // async-signal-safe calls. Returns false (errno set) on failure.
  bool redirect_in_child(int rank) const noexcept;

  // Runs in the parent after forking `rank`: drops the parent's copies of the write ends so
  // that the relay sees EOF once the rank (and anything it spawned) has exited.
  void close_child_ends(int rank);

  // Starts the relay thread. Prints the reason and returns false on failure.
  bool start();

  // Stops the relay once all ranks are gone: drains whatever the ranks already wrote,
  // flushes unterminated last lines, and joins the thread. Idempotent.
  void finish();

 private:
  // One pipe being relayed: either a rank's stdout or its stderr.
  struct Stream {
    UniqueFd read_end;
    UniqueFd write_end;   // The child's end; closed in the parent after the fork.
    std::string prefix;   // "[rank] "
    int target_fd = -1;   // Our fd 1 or 2.
    std::string pending;  // Bytes of an unfinished line.
  };

  enum class ReadResult { kData, kWouldBlock, kEof };

  void loop();
  void drain_and_close_all();
  ReadResult read_once(Stream& stream);
  void close_stream(Stream& stream);
  void consume(Stream& stream, std::string_view data);
  void emit(int target_fd, std::string_view text);

  std::vector<Stream> streams_;  // streams_[2r] is rank r's stdout, streams_[2r+1] its stderr.
  std::vector<char> read_buffer_;
  UniqueFd stop_event_;  // eventfd that tells the relay thread to drain and exit.
  std::thread thread_;
  bool stdout_broken_ = false;  // Set once a write to our stdout failed; later output dropped.
  bool stderr_broken_ = false;
};

}  // namespace stratacl::run

#endif  // STRATACL_TOOLS_STRATARUN_OUTPUT_RELAY_H_
