#!/usr/bin/env python3
"""The link's own speed between two bench/compare "hosts": one TCP stream, 2 GiB.

    link_speed.py --serve ADDR --client-netns NS   (run in the receiving namespace)

listens on ADDR, starts the sender in namespace NS (`ip netns exec NS link_speed.py --connect
ADDR:PORT`), and prints the GB/s received, first byte to last, best of 3.
"""
import argparse
import socket
import subprocess
import sys
import time

CHUNK = 1 << 20


def send(addr, total):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as s:
        buf = bytes(CHUNK)
        for _ in range(total // CHUNK):
            s.sendall(buf)


def receive(conn, total):
    buf = bytearray(CHUNK)
    got, start = 0, None
    while got < total:
        n = conn.recv_into(buf)
        if n == 0:
            break
        if start is None:
            start = time.perf_counter()
        got += n
    return got / (time.perf_counter() - start) / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--serve")
    p.add_argument("--client-netns")
    p.add_argument("--connect")
    p.add_argument("--bytes", type=int, default=2 << 30)
    a = p.parse_args()
    if a.connect:
        return send(a.connect, a.bytes)
    best = 0.0
    for _ in range(3):
        with socket.socket() as srv:
            srv.bind((a.serve, 0))
            srv.listen(1)
            port = srv.getsockname()[1]
            client = subprocess.Popen(["ip", "netns", "exec", a.client_netns, sys.executable,
                                       __file__, "--connect", f"{a.serve}:{port}",
                                       "--bytes", str(a.bytes)])
            conn, _ = srv.accept()
            with conn:
                best = max(best, receive(conn, a.bytes))
            client.wait()
    print(f"{best:.2f}")


if __name__ == "__main__":
    main()
