#!/usr/bin/python3
"""A peer from a future protocol version, for tests/e2e/join_check_test.cc.

Written from protocol/PROTOCOL.md alone: it binds a ROUTER at the endpoint given as its argument
and answers every request with Error(unsupported_version) in an envelope announcing versions 4..5,
as a node whose oldest version is above this build's would. It prints "listening" once bound and
runs until killed.
"""
import sys

import msgpack
import zmq

MAGIC = 0x4D4C524E
ERROR = 11
UNSUPPORTED_VERSION = 3


def main():
    router = zmq.Context().socket(zmq.ROUTER)
    router.bind(sys.argv[1])
    print("listening", flush=True)
    while True:
        frames = router.recv_multipart()
        routing_id, envelope = frames[0], msgpack.unpackb(frames[1])
        request_id = envelope[5] if isinstance(envelope, list) and len(envelope) > 5 else 0
        reply_envelope = [MAGIC, 5, 4, ERROR, "future", request_id, 0]
        body = [UNSUPPORTED_VERSION, "this node speaks protocol versions 4..5"]
        router.send_multipart([routing_id, msgpack.packb(reply_envelope), msgpack.packb(body)])


if __name__ == "__main__":
    main()
