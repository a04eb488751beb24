// Live-handle registries: a destroyed or forged sclComm_t / sclStream_t is an invalid argument,
// never a use-after-free inside the library.
#pragma once

#include "comm/communicator.h"
#include "exec/stream.h"

namespace stratacl::api {

void register_comm(Communicator* c);
void unregister_comm(Communicator* c);
Communicator* find_comm(sclComm_t c);  // nullptr when not live

void register_stream(Stream* s);
void unregister_stream(Stream* s);
Stream* find_stream(sclStream_t s);

// The error text of this thread's last failed call (sclGetLastError(NULL)).
void set_thread_error(const std::string& msg);
const char* thread_error();

// Records an error for sclGetLastError and returns its code.
sclResult_t report(Communicator* c, const Status& s);

}  // namespace stratacl::api
