"""Twisted's server connections send at once when nothing is buffered (#21,
``studio.relay_hot_path``), and keep every byte in order when the socket is full.

A real Twisted reactor on asyncio (as Daphne runs it) in a process of its own, a real TCP
socket, a client that reads slowly at first so the socket fills mid-write."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

SERVER = r"""
import json, sys
from twisted.internet import asyncioreactor
asyncioreactor.install()
from twisted.internet import protocol, reactor
from studio import relay_hot_path
if sys.argv[1] == "patched":
    relay_hot_path.install()

SMALL = [b"frame %d\n" % n for n in range(2000)]
BLOB = bytes(range(256)) * (8 * 4096)  # 8 MiB: more than the socket takes at once
AFTER = [b"after %d\n" % n for n in range(100)]
report = {"at_once": 0, "small": 0}

class Producer:
    # Like Twisted's HTTP channel (Daphne's sockets start as HTTP): a streaming producer
    # that the transport pauses while its buffer is full and resumes once it drains.
    def pauseProducing(self):
        report["paused"] = report.get("paused", 0) + 1
    def resumeProducing(self):
        # The buffer drained: every byte is written, so the server closes.
        report["resumed"] = report.get("resumed", 0) + 1
        self.transport.unregisterProducer()
        self.transport.loseConnection()
    def stopProducing(self):
        pass

class Writer(protocol.Protocol):
    def connectionMade(self):
        producer = Producer()
        producer.transport = self.transport
        self.transport.registerProducer(producer, True)
        for chunk in SMALL:
            self.transport.write(chunk)
            report["small"] += 1
            # Twisted's buffered path registers the socket for writing; ours did not need to.
            report["at_once"] += self.transport not in reactor._writers
        self.transport.write(BLOB)
        for chunk in AFTER:
            self.transport.write(chunk)

    def connectionLost(self, reason):
        print(json.dumps(report), flush=True)
        reactor.stop()

factory = protocol.Factory.forProtocol(Writer)
port = reactor.listenTCP(0, factory, interface="127.0.0.1")
print(port.getHost().port, flush=True)
reactor.run()
"""


def expected() -> bytes:
    small = b"".join(b"frame %d\n" % n for n in range(2000))
    after = b"".join(b"after %d\n" % n for n in range(100))
    return small + bytes(range(256)) * (8 * 4096) + after


@pytest.mark.parametrize("mode", ["patched", "twisted"])
def test_every_byte_arrives_in_order_and_small_writes_go_at_once(mode: str) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with socket.socket() as client:
            # A small window (set before the handshake): the socket fills mid-write.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            client.settimeout(30)
            client.connect(("127.0.0.1", port))
            time.sleep(0.5)  # the server writes everything while nobody reads
            received = bytearray()
            while chunk := client.recv(65536):
                received += chunk
        report = json.loads(server.stdout.readline())
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
    assert bytes(received) == expected()
    assert report["small"] == 2000
    assert report["paused"] >= 1 and report["resumed"] >= 1  # the blob filled the buffer
    if mode == "patched":
        assert report["at_once"] > 0
    else:
        assert report["at_once"] == 0  # the control: Twisted alone buffers every write
