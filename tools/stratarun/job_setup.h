// What stratarun prepares before it forks any rank: standard streams, the job secret, the
// rendezvous socket, the environment the ranks inherit, exec's argument arrays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/unique_fd.h"

namespace stratacl::run {

// Children inherit fds 0-2 and the relay relies on them being taken; if stratarun was started
// with one closed, occupy it with /dev/null so no pipe or socket lands there by accident.
bool ensure_standard_fds_open();
// 16 random bytes as 32 hex digits.
bool make_job_secret(std::string* secret);
// Creates the rendezvous socket before any rank exists, so rank 0 can accept on it and the
// others can connect to it without racing on who binds first.
bool open_rendezvous_socket(const std::string& ip, int backlog, UniqueFd* socket_fd,
                            uint16_t* port);
// stratarun's own environment minus the variables it sets per rank.
std::vector<std::string> inherited_environment();
// Turns strings into the null-terminated char* array that exec wants. The strings must outlive
// the returned vector.
std::vector<char*> to_argv(std::vector<std::string>& strings);

}  // namespace stratacl::run
