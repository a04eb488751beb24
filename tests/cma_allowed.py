#!/usr/bin/env python3
"""Exit 0 when this kernel lets one process read a sibling's memory with process_vm_readv (as
StrataCL ranks started by one launcher are siblings), 1 when it refuses (printing the errno).
An independent check for the tests that expect CMA to work or to be refused."""
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


secret = ctypes.create_string_buffer(b"stratacl-cma-probe", 32)
ready_r, ready_w = os.pipe()
holder = os.fork()
if holder == 0:  # the first sibling: holds the buffer until its reader is done
    os.close(ready_w)
    os.read(ready_r, 1)
    os._exit(0)
reader = os.fork()
if reader == 0:  # the second sibling: reads the first one's buffer
    got = ctypes.create_string_buffer(32)
    local = Iovec(ctypes.cast(got, ctypes.c_void_p), 32)
    remote = Iovec(ctypes.cast(secret, ctypes.c_void_p), 32)
    n = libc.process_vm_readv(holder, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if n != 32 or got.value != secret.value:
        err = ctypes.get_errno()
        print(f"process_vm_readv between siblings refused: {os.strerror(err)} ({err})")
        os._exit(1)
    os._exit(0)
_, status = os.waitpid(reader, 0)
os.write(ready_w, b"x")
os.waitpid(holder, 0)
allowed = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
if allowed:
    print("process_vm_readv between siblings allowed")
sys.exit(0 if allowed else 1)
