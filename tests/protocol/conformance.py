#!/usr/bin/python3
"""Conformance test of a real meshlearn-node against protocol/PROTOCOL.md.

Written from PROTOCOL.md alone, in a second language: Python with Debian's python3-zmq and
python3-msgpack (run it with /usr/bin/python3; scripts/setup.sh installs both). It starts two
meshlearn-node processes on loopback (one plain-text node that serves everything, one with
[security]) and plays their peers: it sends every message type, provokes every error code a node
sends, probes the limits and the versions, and checks every answer byte for byte against the page.

    conformance.py --node BIN --launch BIN --keygen BIN --work DIR

Exit status: 0 when every check passed; 1 when a check failed (each failure is listed); 2 when it
cannot run here (a missing package or binary), saying why. CTest runs it (label protocol).
"""

import argparse
import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import zlib

try:
    import msgpack
    import zmq
except ImportError as missing:  # never a pass: the test says why and fails
    print(f"conformance: cannot run: {missing} (install python3-zmq and python3-msgpack, "
          f"see scripts/setup.sh; run with /usr/bin/python3)", file=sys.stderr)
    sys.exit(2)

# ---- PROTOCOL.md, "Envelope", "Message types", "Error codes", "Limits" -------------------------

MAGIC = 0x4D4C524E
VERSION = 3
MIN_VERSION = 1
TYPES = {
    "Hello": 1, "HelloAck": 2, "PeerList": 3, "GetModel": 4, "Model": 5, "EmbedRequest": 6,
    "EmbedReply": 7, "EmdDecision": 8, "Ping": 9, "Pong": 10, "Error": 11,
    "WitnessEmbedRequest": 12, "WitnessRows": 13, "WitnessResult": 14, "GetSignature": 15,
    "Signature": 16, "Goodbye": 17,
}
NAMES = {number: name for name, number in TYPES.items()}
CODES = {
    "malformed": 1, "bad_magic": 2, "unsupported_version": 3, "unknown_type": 4, "too_large": 5,
    "too_many": 6, "layout_mismatch": 7, "non_finite": 8, "unknown_sender": 9,
    "invalid_argument": 10, "not_found": 11, "io_error": 12, "timeout": 13, "unavailable": 14,
    "refused": 15, "internal": 16,
}
# Codes a node answers requests with (PROTOCOL.md, "Error codes"); the others are never sent.
SENT_CODES = ["malformed", "bad_magic", "unsupported_version", "unknown_type", "too_large",
              "too_many", "layout_mismatch", "non_finite", "unknown_sender", "invalid_argument",
              "timeout", "unavailable", "refused"]
MAX_STRING_BYTES = 1024
MAX_FRAMES = 4
MAX_TENSORS = 4096
MAX_RANK = 8
MAX_PEERS = 4096
MAX_SCORES = 4096
MAX_EMBED = 4096
ID_RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ARCHITECTURE = re.compile(r"^[a-z_]+/[0-9]+/[0-9]+(x[0-9]+)*/[0-9]+$")
Z85_KEY = re.compile(r"^[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}$")
MAX_MESSAGE_BYTES = 131072  # the plain node's [round] max_message_bytes
ROUND_DEADLINE_S = 2.0      # the plain node's [round] round_deadline_s = its GetModel hold limit
TOPK_FRACTION = 0.1         # the secure node's [compression] topk_fraction

# ---- wire helpers ------------------------------------------------------------------------------


def pack(value):
    """One msgpack object; strings as str, bytes never used (the protocol has no bin)."""
    return msgpack.packb(value, use_bin_type=True)


def envelope(msg_type, sender, request_id, round_=0, version=VERSION, min_version=MIN_VERSION,
             magic=MAGIC):
    return pack([magic, version, min_version, msg_type, sender, request_id, round_])


def blob(values):
    return struct.pack("<%df" % len(values), *values)


def with_raw_str(frame, text, raw):
    """`frame` with the msgpack str `text` replaced by one holding the bytes `raw` (which need
    not be UTF-8, so pack() cannot write them)."""
    packed, replacement = pack(text), pack("x" * len(raw))[:-len(raw)] + raw
    if packed not in frame:
        raise ValueError("%r is not in the frame" % text)
    return frame.replace(packed, replacement, 1)


def round_half_away(x):
    """C's round() of a non-negative double: the nearest integer, halves away from zero."""
    return math.floor(x + 0.5)


def floats(frame):
    if len(frame) % 4:
        raise ValueError("blob of %d bytes is not whole float32 values" % len(frame))
    return struct.unpack("<%df" % (len(frame) // 4), frame)


# PROTOCOL.md, "Compressed blob encodings": the codec numbers of a blob's header.
CODECS = {"none": 0, "fp16": 1, "int8": 2, "topk": 3}


def int8_values(frame):
    """(block size, values) of an int8 blob: header, ceil(n/B) float32 scales, n int8 values."""
    codec, value_codec, block, count = struct.unpack_from("<BBHI", frame, 0)
    if codec != CODECS["int8"] or value_codec != 0 or not 64 <= block <= 256:
        raise ValueError("not an int8 blob header: %r" % ((codec, value_codec, block, count),))
    blocks = (count + block - 1) // block
    if len(frame) != 8 + 4 * blocks + count:
        raise ValueError("int8 blob of %d values is %d bytes" % (count, len(frame)))
    scales = struct.unpack_from("<%df" % blocks, frame, 8)
    q = struct.unpack_from("<%db" % count, frame, 8 + 4 * blocks)
    return block, [q[i] * scales[i // block] for i in range(count)], scales


def f32(x):
    """`x` rounded to float32 (a sum or product of two float32 values in double precision,
    rounded once, is the float32 operation's result)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def topk_update(blob, count):
    """The `count` values a top-k blob with int8 values decodes to (PROTOCOL.md, "Compressed blob
    encodings"): header, k, ceil(k/B) scales, k int8 values, then k LEB128 index gaps."""
    codec, value_codec, block, n = struct.unpack_from("<BBHI", blob, 0)
    (k,) = struct.unpack_from("<I", blob, 8)
    if codec != CODECS["topk"] or value_codec != CODECS["int8"] or n != count or k > n:
        raise ValueError("not a top-k int8 blob of %d values: %r" % (count, (codec, value_codec, n, k)))
    blocks = (k + block - 1) // block
    scales = struct.unpack_from("<%df" % blocks, blob, 12)
    q = struct.unpack_from("<%db" % k, blob, 12 + 4 * blocks)
    at, index, indices = 12 + 4 * blocks + k, -1, []
    for j in range(k):
        gap, shift = 0, 0
        while True:
            byte = blob[at]
            at += 1
            gap |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        index = gap if j == 0 else index + gap
        indices.append(index)
    if at != len(blob) or indices[-1] >= n:
        raise ValueError("top-k indices do not end the blob exactly")
    values = [0.0] * n
    for j, i in enumerate(indices):
        values[i] = f32(q[j] * scales[j // block])
    return values


def chain_items(frame):
    """The blobs of a top-k Model's chain frame: each a uint32 length and that many bytes."""
    items, at = [], 0
    while at < len(frame):
        (length,) = struct.unpack_from("<I", frame, at)
        items.append(frame[at + 4:at + 4 + length])
        if at + 4 + length > len(frame):
            raise ValueError("chain item overruns the frame")
        at += 4 + length
    return items


def unpack_one(frame, what):
    """The single msgpack object of `frame` (PROTOCOL.md: exactly one, nothing after it)."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(frame)
    objects = list(unpacker)
    if len(objects) != 1:
        raise ValueError("%s frame holds %d msgpack objects" % (what, len(objects)))
    return objects[0]


class Reply:
    """A decoded message: its envelope fields, body array and blob frames."""

    def __init__(self, frames):
        self.frames = frames
        env = unpack_one(frames[0], "envelope")
        if not isinstance(env, list) or len(env) < 7:
            raise ValueError("envelope is not an array of at least 7 fields: %r" % (env,))
        (self.magic, self.version, self.min_version, self.type, self.sender, self.request_id,
         self.round) = env[:7]
        self.body = unpack_one(frames[1], "body") if len(frames) > 1 else None
        self.blobs = frames[2:]

    @property
    def name(self):
        return NAMES.get(self.type, "type %r" % self.type)

    def error(self):
        """(code, text) of an Error, else None."""
        if self.type != TYPES["Error"]:
            return None
        return self.body[0], self.body[1]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- checks ------------------------------------------------------------------------------------

failures = []
passed = 0


def check(condition, what, detail=""):
    global passed
    if condition:
        passed += 1
    else:
        failures.append(what + (": " + str(detail) if detail != "" else ""))
        print("FAIL " + failures[-1], flush=True)
    return condition


def check_envelope(reply, request_id, what):
    check(reply.magic == MAGIC, what + ": magic", reply.magic)
    check(reply.version == VERSION and reply.min_version == MIN_VERSION,
          what + ": a version-2 node answers with protocol_version 2, min_version 1",
          (reply.version, reply.min_version))
    check(reply.request_id == request_id, what + ": the reply repeats the request id",
          (reply.request_id, request_id))
    check(isinstance(reply.sender, str) and ID_RULE.match(reply.sender),
          what + ": the sender is a node id", reply.sender)
    check(isinstance(reply.round, int), what + ": round is an integer", reply.round)


def check_error(reply, code_name, request_id, what):
    error = reply.error()
    if not check(error is not None, what + ": answered with an Error", reply.name):
        return
    code, text = error
    check(code == CODES[code_name], what + ": Error code " + code_name,
          "got %r (%s)" % (code, text))
    check(isinstance(text, str) and text, what + ": the Error says why", text)
    check(len(reply.frames) == 2 and len(reply.body) >= 2, what + ": Error has 2 frames")
    check(reply.request_id == request_id, what + ": the Error carries the request id",
          (reply.request_id, request_id))
    seen_codes.add(code_name)


seen_codes = set()

# ---- a client of one node ----------------------------------------------------------------------


class Client:
    """A DEALER talking to one node, as a peer called `sender`."""

    def __init__(self, context, endpoint, sender, curve=None):
        self.context = context
        self.endpoint = endpoint
        self.sender = sender
        self.curve = curve
        self.next_id = 1000
        self.connect()

    def connect(self):
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if self.curve:
            server_key, public, secret = self.curve
            self.socket.curve_serverkey = server_key
            self.socket.curve_publickey = public
            self.socket.curve_secretkey = secret
        self.socket.connect(self.endpoint)

    def reconnect(self):
        self.socket.close(0)
        self.connect()

    def send(self, frames, timeout=10.0):
        """Sends raw frames and returns the decoded reply, or None after `timeout` seconds."""
        self.socket.send_multipart(frames)
        if not self.socket.poll(int(timeout * 1000)):
            return None
        return Reply(self.socket.recv_multipart())

    def ask(self, type_name, body, blobs=(), timeout=10.0, sender=None, **envelope_fields):
        self.next_id += 1
        frames = [envelope(TYPES[type_name], sender or self.sender, self.next_id, **envelope_fields),
                  pack(body)] + list(blobs)
        return self.next_id, self.send(frames, timeout)


# ---- peers played by this script (the nodes greet and ask them) -------------------------------


class PlayedPeer(threading.Thread):
    """A ROUTER playing the peer `peer_id`: answers Hello with HelloAck (claiming `version`),
    Goodbye with its acknowledgement, WitnessRows with a WitnessResult, anything else with
    Error(unavailable); records every request."""

    def __init__(self, context, peer_id, version=VERSION):
        super().__init__(daemon=True)
        self.peer_id = peer_id
        self.version = version
        self.socket = context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        port = self.socket.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "tcp://127.0.0.1:%d" % port
        self.received = []  # Reply of every request
        self.lock = threading.Lock()
        self.stopping = False

    def run(self):
        while not self.stopping:
            if not self.socket.poll(100):
                continue
            parts = self.socket.recv_multipart()
            route, frames = parts[0], parts[1:]
            try:
                request = Reply(frames)
            except Exception as e:  # the node sent something this page does not allow
                with self.lock:
                    self.received.append(e)
                continue
            with self.lock:
                self.received.append(request)
            body = [14, "%s serves nothing" % self.peer_id]
            reply_type = TYPES["Error"]
            if request.type == TYPES["Hello"]:
                reply_type = TYPES["HelloAck"]
                body = [self.endpoint, request.body[1], "cos_weights", "", 7]
            elif request.type == TYPES["Goodbye"]:
                reply_type, body = TYPES["Goodbye"], [""]
            elif request.type == TYPES["WitnessRows"]:
                reply_type, body = TYPES["WitnessResult"], [request.body[0], 0.25]
            reply = [envelope(reply_type, self.peer_id, request.request_id, version=self.version,
                              min_version=1), pack(body)]
            self.socket.send_multipart([route] + reply)

    def requests(self, type_name):
        with self.lock:
            return [r for r in self.received if isinstance(r, Reply) and r.type == TYPES[type_name]]

    def malformed(self):
        with self.lock:
            return [r for r in self.received if not isinstance(r, Reply)]


def wait_for(condition, seconds, step=0.1):
    until = time.time() + seconds
    while time.time() < until:
        result = condition()
        if result:
            return result
        time.sleep(step)
    return condition()


# ---- the nodes ---------------------------------------------------------------------------------

SCENARIO = """name = "conformance"
description = "two Fashion-MNIST shards for the protocol conformance test"
seed = 3
[data]
dataset = "fashion-mnist"
shift = "covariate"
clients = 2
cluster_sizes = [2]
rotations = [0]
train_per_client = 60
validation_per_client = 40
test_per_client = 20
[[methods]]
name = "any"
"""


def node_config(node_id, port, shard, out, peers, extra="", top=""):
    text = ('id = "%s"\nlisten = "tcp://127.0.0.1:%d"\noutput_dir = "%s"\n' % (node_id, port, out) +
            top +
            '[data]\nshard = "%s"\n' % shard +
            '[model]\narchitecture = "mlp"\nhidden = 16\n' +
            '[training]\nrounds = 100000\nbatch_size = 16\n' +
            '[round]\nround_deadline_s = %g\nmin_round_s = 0.3\nlinger_s = 0\n' % ROUND_DEADLINE_S +
            'max_message_bytes = %d\n' % MAX_MESSAGE_BYTES + extra)
    for peer_id, endpoint, key in peers:
        text += '[[peers]]\nid = "%s"\naddress = "%s"\n' % (peer_id, endpoint)
        if key:
            text += 'public_key = "%s"\n' % key
    return text


def start_node(binary, config_path, log_path):
    log = open(log_path, "wb")
    return subprocess.Popen([binary, "--config", config_path], stdout=log, stderr=subprocess.STDOUT)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node", required=True)
    parser.add_argument("--launch", required=True)
    parser.add_argument("--keygen", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    for binary in (args.node, args.launch, args.keygen):
        if not os.access(binary, os.X_OK):
            print("conformance: cannot run: %s is not an executable" % binary, file=sys.stderr)
            return 2
    work = os.path.abspath(args.work)
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    with open(work + "/scenario.toml", "w") as f:
        f.write(SCENARIO)
    partition = subprocess.run([args.launch, work + "/scenario.toml", "--partition-only",
                                "--out", work + "/part"], capture_output=True, text=True)
    if partition.returncode != 0:
        print("conformance: cannot run: the partition failed:\n" + partition.stdout +
              partition.stderr, file=sys.stderr)
        return 2

    context = zmq.Context()
    peer = PlayedPeer(context, "py-peer")
    old_peer = PlayedPeer(context, "py-old", version=1)
    witness = PlayedPeer(context, "py-witness")
    silent = context.socket(zmq.ROUTER)  # a listen endpoint that never answers
    silent_endpoint = "tcp://127.0.0.1:%d" % silent.bind_to_random_port("tcp://127.0.0.1")
    for p in (peer, old_peer, witness):
        p.start()

    # The plain node: serves every exchange (EMD, witness, signatures).
    plain_port, http_port = free_port(), free_port()
    plain_endpoint = "tcp://127.0.0.1:%d" % plain_port
    with open(work + "/plain.toml", "w") as f:
        f.write(node_config("conf-node", plain_port, work + "/part/shards/client-0.shard",
                            work + "/plain", [("py-peer", peer.endpoint, ""),
                                              ("py-old", old_peer.endpoint, "")],
                            '[learning]\nmetric = "cos_weights"\nsampler = "centroid_cluster"\n'
                            'peers_per_round = 1\n[signature]\nk = 2\nmax_samples = 40\n'
                            '[emd]\nenabled = true\nmax_samples = 40\n'
                            '[compression]\ncodec = "int8"\nembeddings = "int8"\n',
                            top='http_port = %d\n' % http_port))
    # The secure node: CURVE, an allowlist binding this script's key to the id "py-client".
    subprocess.run([args.keygen, "--name", "conf-secure", "--out", work + "/keys"], check=True,
                   capture_output=True)
    node_public = open(work + "/keys/conf-secure.pub").read().split("\n")[1].split()[0]
    client_public, client_secret = zmq.curve_keypair()
    with open(work + "/keys/allowed_keys", "w") as f:
        f.write("# this script's key, bound to its id\n%s py-client\n" % client_public.decode())
    secure_port = free_port()
    with open(work + "/secure.toml", "w") as f:
        f.write(node_config("conf-secure", secure_port, work + "/part/shards/client-1.shard",
                            work + "/secure",
                            [("py-client", silent_endpoint, client_public.decode())],
                            '[security]\nsecret_key_file = "%s/keys/conf-secure.key"\n'
                            'allowed_keys_file = "%s/keys/allowed_keys"\n'
                            '[compression]\ncodec = "topk"\ntopk_fraction = %g\n' %
                            (work, work, TOPK_FRACTION)))
    # The held node: announces version 2 ([round] max_protocol_version). Its peer never answers,
    # so that the played peers hear only the other nodes.
    held_port = free_port()
    with open(work + "/held.toml", "w") as f:
        f.write(node_config("conf-held", held_port, work + "/part/shards/client-1.shard",
                            work + "/held", [("py-silent", silent_endpoint, "")],
                            "max_protocol_version = 2\n"))
    plain = start_node(args.node, work + "/plain.toml", work + "/plain.log")
    secure = start_node(args.node, work + "/secure.toml", work + "/secure.log")
    held = start_node(args.node, work + "/held.toml", work + "/held.log")
    try:
        run_checks(context, args, work, plain, plain_endpoint, http_port, peer, old_peer, witness,
                   silent_endpoint, secure, "tcp://127.0.0.1:%d" % secure_port, node_public,
                   client_public, client_secret)
        check_held_node(context, "tcp://127.0.0.1:%d" % held_port, held, work)
    finally:
        for process in (plain, secure, held):
            if process.poll() is None:
                process.kill()
                process.wait()
        for p in (peer, old_peer, witness):
            p.stopping = True
            p.join()
    print("conformance: %d checks passed, %d failed" % (passed, len(failures)))
    for failure in failures:
        print("  failed: " + failure)
    if failures:
        for name in ("plain.log", "secure.log", "held.log"):
            print("---- " + name + " (last 30 lines)")
            print("".join(open(work + "/" + name).readlines()[-30:]))
    context.destroy(0)
    return 1 if failures else 0


def check_compressed_embeddings(client, layout, weights, plain_rows, rows, cols):
    """Version 3, "Compressed embeddings": the plain node's [compression] embeddings is int8. An
    EmbedRequest without accepts (a version-2 requester's, or the one just answered with
    `plain_rows`) gets float32 rows; one accepting int8 gets the same rows as an int8 blob, within
    half a step; one accepting only fp16 gets float32. Bad int8 rows are refused with their code."""
    request = [99, 30, layout]
    rid, v2 = client.ask("EmbedRequest", request, [blob(weights)], timeout=60, version=2)
    rid, v3 = client.ask("EmbedRequest", request + [[CODECS["fp16"], CODECS["int8"]]],
                         [blob(weights)], timeout=60)
    rid, fp16 = client.ask("EmbedRequest", request + [[CODECS["fp16"]]], [blob(weights)],
                           timeout=60)
    for reply, what in ((v2, "a version-2 EmbedRequest"), (fp16, "an EmbedRequest accepting fp16")):
        check(reply is not None and reply.type == TYPES["EmbedReply"] and len(reply.body) == 2 and
              reply.body[:2] == [rows, cols] and len(reply.blobs[0]) == 4 * rows * cols,
              what + " from an int8 node: float32 rows, no encoding field",
              reply and (reply.name, reply.body, [len(b) for b in reply.blobs]))
    if check(v3 is not None and v3.type == TYPES["EmbedReply"] and len(v3.body) == 3 and
             v3.body[:2] == [rows, cols] and v3.body[2] == CODECS["int8"],
             "an EmbedRequest accepting int8: EmbedReply.encoding = 2 after cols",
             v3 and (v3.name, v3.body)):
        try:
            block, values, scales = int8_values(v3.blobs[0])
        except (ValueError, struct.error) as e:
            check(False, "the int8 rows follow their encoding", e)
        else:
            check(block == 128 and len(values) == rows * cols,
                  "int8 rows of rows x cols values in the default blocks of 128",
                  (block, len(values), rows * cols))
            worst = max((abs(a - b) - (scales[i // block] / 2 * (1 + 1e-5) + 1e-6 * abs(b))
                         for i, (a, b) in enumerate(zip(values, plain_rows))), default=1)
            check(len(plain_rows) == len(values) and worst <= 0,
                  "int8 rows are within half a step of the float32 rows of the same request",
                  worst)
    # The receiver's checks (PROTOCOL.md, "Compressed embeddings"): an int8 blob of 3 x 3 rows
    # with one scale, sent as an EmbedReply (refused by its blob before its role).
    good = struct.pack("<BBHI", CODECS["int8"], 0, 64, 9) + struct.pack("<f", 0.125) + \
        struct.pack("<9b", 4, -10, 24, 1, -60, 16, 0, 127, -1)
    nan_scale = good[:8] + struct.pack("<f", float("nan")) + good[12:]
    ten = struct.pack("<BBHI", CODECS["int8"], 0, 64, 10) + good[8:] + b"\x01"
    for number, frame, code_name, what in (
            (7101, nan_scale, "non_finite", "int8 rows with a NaN scale"),
            (7102, ten, "layout_mismatch", "int8 rows of 10 values for 3 x 3"),
            (7103, good[:-1], "malformed", "int8 rows one byte short")):
        reply = client.send([envelope(TYPES["EmbedReply"], "py-client", number), pack([3, 3, 2]),
                             frame])
        if check(reply is not None, what + " is answered"):
            check_error(reply, code_name, number, what)
    reply = client.send([envelope(TYPES["EmbedReply"], "py-client", 7104), pack([3, 3, 3]), good])
    if check(reply is not None, "EmbedReply.encoding = 3 (top-k) is answered"):
        check_error(reply, "malformed", 7104, "EmbedReply.encoding = 3 (top-k)")


def check_held_node(context, endpoint, process, work):
    """PROTOCOL.md, "Versions and compatibility": a node held at version 2 sends version 2, its
    Errors included, and reads what its build reads."""
    client = Client(context, endpoint, "py-client")

    def pong():
        if process.poll() is not None:
            raise SystemExit("conformance: the held node exited with %s; see %s/held.log" %
                             (process.returncode, work))
        rid, reply = client.ask("Ping", [1], timeout=1.0)
        if reply is None:
            client.reconnect()
        return reply
    if not check(wait_for(pong, 120, step=0.5) is not None, "the held node answers a Ping"):
        return
    rid, reply = client.ask("Ping", [21], version=3, min_version=3)
    check(reply is not None and reply.type == TYPES["Pong"] and reply.version == 2 and
          reply.min_version == MIN_VERSION,
          "a [3, 3] sender is answered, in a version-2 envelope",
          reply and (reply.name, reply.version, reply.min_version))
    reply = client.send([envelope(9, "py-client", 7101), b"\xc1"])
    if check(reply is not None, "the held node answers a message it cannot decode"):
        check_error(reply, "malformed", 7101, "the held node, a body that is not msgpack")
        check(reply.version == 2 and reply.min_version == MIN_VERSION,
              "its Error carries the version it announces", (reply.version, reply.min_version))
    reply = client.send([envelope(9, "py-client", 7102, version=9, min_version=9), pack([1])])
    if check(reply is not None, "the held node answers a version-9-only sender"):
        check_error(reply, "unsupported_version", 7102, "the held node, version 9..9")
        check(reply.version == 2 and "%d..%d" % (MIN_VERSION, VERSION) in reply.body[1],
              "in a version-2 envelope, naming the build's range it reads",
              (reply.version, reply.body[1]))


def run_checks(context, args, work, plain, plain_endpoint, http_port, peer, old_peer, witness,
               silent_endpoint, secure, secure_endpoint, node_public, client_public, client_secret):
    client = Client(context, plain_endpoint, "py-client")

    # Ping until the node is up and round 0 is published (GetModel answers with a Model).
    def model_ready():
        if plain.poll() is not None:
            raise SystemExit("conformance: the plain node exited with %s; see %s/plain.log:\n%s" %
                             (plain.returncode, work, open(work + "/plain.log").read()[-3000:]))
        rid, reply = client.ask("GetModel", [0, False], timeout=1.0)
        if reply is None:
            client.reconnect()
            return None
        return (rid, reply) if reply.type == TYPES["Model"] else None
    ready = wait_for(model_ready, 240, step=0.5)
    if not check(ready is not None, "the plain node serves a Model within 240 s"):
        return
    model_rid, model = ready

    # ---- every message type --------------------------------------------------------------
    # The node greets its configured peers; its Hello is a well-formed version-2 message, and
    # tells the architecture id a peer must share (PROTOCOL.md, "Hello / HelloAck").
    hellos = wait_for(lambda: peer.requests("Hello"), 60)
    if not check(hellos, "the node greets its configured peer with Hello"):
        return
    hello = hellos[0]
    architecture = hello.body[1]
    check(hello.version == VERSION and hello.min_version == MIN_VERSION and
          hello.sender == "conf-node" and hello.body[0] == plain_endpoint and
          len(hello.frames) == 2 and len(hello.body) >= 5, "the node's own Hello", hello.body)
    check(ARCHITECTURE.match(architecture),
          "architecture_id is <model>/<outputs>/<input shape>/<parameters>", architecture)
    check(architecture.startswith("mlp/10/1x28x28/"),
          "the architecture id of an MLP on 1x28x28 images with 10 classes", architecture)
    check(not peer.malformed() and not old_peer.malformed(),
          "every message the node sent decodes", peer.malformed() + old_peer.malformed())

    # 1 Hello -> 2 HelloAck. The client names a listen endpoint that never answers: it stays a
    # candidate (PROTOCOL.md, "Hello / HelloAck").
    rid, ack = client.ask("Hello", [silent_endpoint, architecture, "cos_weights", "", 5])
    if check(ack is not None and ack.type == TYPES["HelloAck"], "Hello is answered HelloAck",
             ack and (ack.name, ack.body)):
        check_envelope(ack, rid, "HelloAck")
        check(len(ack.frames) == 2 and len(ack.body) >= 5, "HelloAck has its 5 fields")
        endpoint, their_architecture, metric, key, nonce = ack.body[:5]
        check(endpoint == plain_endpoint, "HelloAck.listen_endpoint is the node's", endpoint)
        check(their_architecture == architecture, "HelloAck names the same architecture",
              their_architecture)
        check(metric == "cos_weights" and key == "" and isinstance(nonce, int) and nonce >= 0,
              "HelloAck metric, empty key in plain text, nonce uint", (metric, key, nonce))

    # 3 PeerList -> 3 PeerList: the node itself first, then verified peers only. py-peer answered
    # the node's Hello (verified); py-client did not (a candidate) and is not gossiped.
    def peer_list():
        rid, reply = client.ask("PeerList", [[["py-x", "tcp://127.0.0.1:1", ""]]])
        return (rid, reply) if reply and "py-peer" in [p[0] for p in reply.body[0]] else None
    listed = wait_for(peer_list, 60)
    if check(listed, "PeerList lists the verified peer py-peer"):
        rid, reply = listed
        check_envelope(reply, rid, "PeerList")
        members = reply.body[0]
        check(members[0][:2] == ["conf-node", plain_endpoint], "PeerList starts with the node",
              members[0])
        check(all(isinstance(m, list) and len(m) >= 3 and ID_RULE.match(m[0]) for m in members),
              "PeerInfo = [id, endpoint, public_key]", members)
        check("py-client" not in [m[0] for m in members],
              "a peer that never answered the node's Hello is not gossiped", members)
        check("py-x" not in [m[0] for m in members], "a gossiped stranger is not passed on", members)

    # 4 GetModel -> 5 Model (already received above).
    check_envelope(model, model_rid, "Model")
    round_, train_size, early_stopped, layout, score_row = model.body[:5]
    check(len(model.body) == 5 and len(model.frames) == 3,
          "a Model without update has 5 fields and 1 blob", (len(model.body), len(model.frames)))
    total = 0
    for name, shape, offset in layout:
        check(offset == total, "tensor %s starts where the previous ended" % name, (offset, total))
        numel = 1
        for d in shape:
            numel *= d
        total += numel
    weights = floats(model.blobs[0])
    check(len(weights) == total, "the weights blob holds offset + numel of the last tensor",
          (len(weights), total))
    check(architecture.endswith("/%d" % total), "architecture_id ends with the parameter count",
          (architecture, total))
    check(isinstance(train_size, int) and train_size == 60 and early_stopped is False and
          isinstance(score_row, list), "Model fields", (round_, train_size, early_stopped))
    # with_update: a node without a clustering policy sends no update (and no second blob).
    rid, reply = client.ask("GetModel", [0, False, True])
    check(reply is not None and reply.type == TYPES["Model"] and len(reply.frames) == 3,
          "GetModel with_update from a node without updates: a Model with one blob",
          reply and reply.name)

    # Version 3, "Compressed models": the plain node's [compression] codec is int8. A GetModel
    # without accepts (a version-2 requester's) gets float32; one accepting int8 gets the same
    # snapshot as an int8 blob, within half a quantisation step; one accepting only fp16 gets
    # float32.
    rid, latest = client.ask("GetModel", [0, False])
    if check(latest is not None and latest.type == TYPES["Model"], "the latest Model",
             latest and latest.name):
        asked = latest.body[0]
        rid, v2 = client.ask("GetModel", [asked, True], version=2)
        rid, v3 = client.ask("GetModel", [asked, True, False, [CODECS["fp16"], CODECS["int8"]]])
        rid, fp16 = client.ask("GetModel", [asked, True, False, [CODECS["fp16"]]])
        # PROTOCOL.md, "A field or type newer than its envelope": accepts is honoured in a
        # version-2 envelope; an entry 0 (none) is ignored like an unknown number.
        rid, v2_accepting = client.ask("GetModel", [asked, True, False, [CODECS["int8"]]],
                                       version=2)
        check(v2_accepting is not None and v2_accepting.type == TYPES["Model"] and
              len(v2_accepting.body) == 7 and v2_accepting.body[6] == CODECS["int8"],
              "a version-2 envelope's GetModel accepting int8 gets int8",
              v2_accepting and (v2_accepting.name, v2_accepting.body[5:]))
        rid, zero = client.ask("GetModel", [asked, True, False, [CODECS["none"]]])
        check(zero is not None and zero.type == TYPES["Model"] and len(zero.body) == 5 and
              len(zero.blobs[0]) == 4 * total,
              "a GetModel accepting only 0 (none) gets float32", zero and zero.name)
        for reply, what in ((v2, "a version-2 GetModel"), (fp16, "a GetModel accepting fp16")):
            check(reply is not None and reply.type == TYPES["Model"] and len(reply.body) == 5 and
                  len(reply.frames) == 3 and len(reply.blobs[0]) == 4 * total and
                  reply.body[0] == asked,
                  what + " from an int8 node: float32 weights, no encoding field",
                  reply and (reply.name, len(reply.body), [len(b) for b in reply.blobs]))
        if check(v3 is not None and v3.type == TYPES["Model"] and len(v3.body) == 7 and
                 v3.body[5] is False and v3.body[6] == CODECS["int8"] and len(v3.frames) == 3 and
                 v3.body[0] == asked,
                 "a GetModel accepting int8: Model.encoding = 2 after update = false",
                 v3 and (v3.name, v3.body[5:], len(v3.frames))):
            try:
                block, values, scales = int8_values(v3.blobs[0])
            except (ValueError, struct.error) as e:
                check(False, "the int8 blob follows its encoding", e)
            else:
                check(block == 128 and len(values) == total,
                      "int8 blob of the layout's count in the default blocks of 128",
                      (block, len(values), total))
                original = floats(v2.blobs[0]) if v2 is not None else []
                # Half a step, up to float32 rounding of the product and of the step itself.
                worst = max((abs(a - b) - (scales[i // block] / 2 * (1 + 1e-5) + 1e-6 * abs(b))
                             for i, (a, b) in enumerate(zip(values, original))), default=1)
                check(len(original) == len(values) and worst <= 0,
                      "int8 values are within half a step of the float32 snapshot", worst)
                check(len(v3.blobs[0]) < len(v2.blobs[0]) / 3.5,
                      "the int8 blob is under 1/3.5 of the float32 one",
                      (len(v3.blobs[0]), len(v2.blobs[0])))

    # 6 EmbedRequest -> 7 EmbedReply.
    rid, reply = client.ask("EmbedRequest", [99, 30, layout], [blob(weights)], timeout=60)
    if check(reply is not None and reply.type == TYPES["EmbedReply"], "EmbedRequest -> EmbedReply",
             reply and (reply.name, reply.body)):
        check_envelope(reply, rid, "EmbedReply")
        rows, cols = reply.body[:2]
        check(0 < rows <= 30 and cols > 0 and len(floats(reply.blobs[0])) == rows * cols,
              "EmbedReply holds rows x cols floats, at most max_samples rows", (rows, cols))
        check(len(reply.body) == 2, "an EmbedRequest without accepts: no encoding field",
              reply.body)
        check_compressed_embeddings(client, layout, weights, floats(reply.blobs[0]), rows, cols)

    # 8 EmdDecision -> EmdDecision.
    rid, reply = client.ask("EmdDecision", [True, 0.125, 0.0625])
    check(reply is not None and reply.type == TYPES["EmdDecision"] and
          reply.body[:3] == [True, 0.125, 0.0625], "EmdDecision is answered with one",
          reply and reply.body)
    # With the automatic rule's optional fourth field, the ids the sender leans to accept.
    rid, reply = client.ask("EmdDecision", [False, 0.5, 0.0625, ["node-7", "node-8"]])
    check(reply is not None and reply.type == TYPES["EmdDecision"],
          "EmdDecision with accepts is answered with one", reply and (reply.name, reply.body))
    rid, reply = client.ask("EmdDecision", [False, 0.5, 0.0625, ["node-7", "bad id"]])
    check_error(reply, "invalid_argument", rid, "EmdDecision.accepts holding a bad node id")

    # 9 Ping -> 10 Pong, with the nonce.
    rid, reply = client.ask("Ping", [2 ** 63 + 5])
    check(reply is not None and reply.type == TYPES["Pong"] and reply.body[0] == 2 ** 63 + 5,
          "Ping -> Pong with the Ping's nonce", reply and reply.body)

    # 12 WitnessEmbedRequest -> the node sends 13 WitnessRows to the witness we name, which answers
    # 14 WitnessResult, which the node passes back to us.
    rid, reply = client.ask("WitnessEmbedRequest",
                            [99, 30, 0xfeed, ["py-witness", witness.endpoint, ""], layout],
                            [blob(weights)], timeout=60)
    if check(reply is not None and reply.type == TYPES["WitnessResult"],
             "WitnessEmbedRequest -> WitnessResult", reply and (reply.name, reply.body)):
        check(reply.body[:2] == [0xfeed, 0.25], "the witness's result is passed back", reply.body)
    rows_sent = witness.requests("WitnessRows")
    if check(rows_sent, "the node sent its rows to the witness"):
        session, requester, responder, side, rows, cols = rows_sent[0].body[:6]
        check([session, requester, responder, side] == [0xfeed, "py-client", "conf-node", 1] and
              len(floats(rows_sent[0].blobs[0])) == rows * cols,
              "WitnessRows: session, requester, responder, side 1, rows x cols",
              rows_sent[0].body)
    # The node as a witness: both sides of a measurement, from the nodes they name.
    side_a = Client(context, plain_endpoint, "py-a")
    side_b = Client(context, plain_endpoint, "py-b")
    rows_body = lambda side: [0xbeef, "py-a", "py-b", side, 3, 2]
    side_a.next_id += 1
    side_a.socket.send_multipart([envelope(13, "py-a", side_a.next_id), pack(rows_body(0)),
                                  blob([0, 1, 1, 0, 1, 1])])
    side_b.next_id += 1
    side_b.socket.send_multipart([envelope(13, "py-b", side_b.next_id), pack(rows_body(1)),
                                  blob([0, 1, 1, 0, 1, 1])])
    for side, name in ((side_a, "requester"), (side_b, "responder")):
        got = side.socket.poll(60000) and Reply(side.socket.recv_multipart())
        check(got and got.type == TYPES["WitnessResult"] and got.body[0] == 0xbeef and
              isinstance(got.body[1], float) and math.isfinite(got.body[1]),
              "a witness answers the %s's WitnessRows with the WitnessResult" % name,
              got and got.body)

    # 15 GetSignature -> 16 Signature (k = 2 centroids).
    rid, reply = client.ask("GetSignature", [])
    if check(reply is not None and reply.type == TYPES["Signature"], "GetSignature -> Signature",
             reply and reply.name):
        rows, cols = reply.body[:2]
        check(rows == 2 and len(floats(reply.blobs[0])) == rows * cols,
              "Signature holds k x cols centroids", (rows, cols))

    # 17 Goodbye -> Goodbye (acknowledged with an empty reason).
    rid, reply = client.ask("Goodbye", ["leaving for a moment"])
    check(reply is not None and reply.type == TYPES["Goodbye"] and reply.body == [""] and
          reply.request_id == rid, "Goodbye is acknowledged with a Goodbye", reply and reply.body)

    # Reply-only types sent as requests: invalid_argument (11 Error included).
    for name, body, blobs in (("HelloAck", [silent_endpoint, architecture, "x", "", 1], []),
                              ("Model", [0, 1, False, layout, []], [blob(weights)]),
                              ("EmbedReply", [1, 2], [blob([1, 2])]),
                              ("Pong", [1], []), ("Error", [13, "x"], []),
                              ("WitnessResult", [1, 0.5], []),
                              ("Signature", [1, 2], [blob([1, 2])])):
        rid, reply = client.ask(name, body, blobs)
        if check(reply is not None, name + " as a request is answered"):
            check_error(reply, "invalid_argument", rid, name + " as a request")

    # ---- every error code ------------------------------------------------------------------
    def raw(frames, what, code_name, request_id):
        reply = client.send(frames)
        if check(reply is not None, what + " is answered"):
            check_error(reply, code_name, request_id, what)

    raw([envelope(9, "py-client", 7001), b"\xc1"], "a body that is not msgpack", "malformed", 7001)
    raw([envelope(9, "py-client", 7002), b"\x81\x01\x02"], "a map where an array belongs",
        "malformed", 7002)
    raw([envelope(11, "py-client", 7003), b"\x92\x0d\xa2\xff\xfe"], "a str that is not UTF-8",
        "malformed", 7003)
    raw([envelope(9, "py-client", 7004)], "a message of one frame", "malformed", 7004)
    raw([envelope(9, "py-client", 7005, magic=0xDEADBEEF), pack([1])], "bad magic", "bad_magic",
        7005)
    reply = client.send([envelope(9, "py-client", 7006, version=9, min_version=9), pack([1])])
    if check(reply is not None, "a version-9-only peer is answered"):
        check_error(reply, "unsupported_version", 7006, "version 9..9")
        check("9..9" in reply.body[1] and "%d..%d" % (MIN_VERSION, VERSION) in reply.body[1],
              "unsupported_version names both ranges", reply.body[1])
    raw([envelope(200, "py-client", 7007), pack([])], "type 200", "unknown_type", 7007)
    raw([envelope(11, "py-client", 7008), pack([13, "e" * (MAX_STRING_BYTES + 1)])],
        "a string of max_string_bytes + 1", "too_large", 7008)
    raw([envelope(9, "py-client", 7009), pack([1]), b"\0" * (MAX_MESSAGE_BYTES // 2),
         b"\0" * (MAX_MESSAGE_BYTES // 2)], "frames summing above max_message_bytes", "too_large",
        7009)
    raw([envelope(9, "py-client", 7010), b"\0" * (MAX_MESSAGE_BYTES + 1000)],
        "one frame above max_message_bytes (within twice it)", "too_large", 7010)
    raw([envelope(9, "py-client", 7011), pack([1]), b"", b"", b""], "5 frames", "too_many", 7011)
    raw([envelope(3, "py-client", 7012),
         pack([[["p%d" % i, "tcp://127.0.0.1:1", ""] for i in range(MAX_PEERS + 1)]])],
        "a PeerList of max_peers + 1", "too_many", 7012)
    raw([envelope(6, "py-client", 7013), pack([1, 5, [["t%d" % i, [1], i]
                                                     for i in range(MAX_TENSORS + 1)]]),
         blob([0.0] * (MAX_TENSORS + 1))], "a layout of max_tensors + 1", "too_many", 7013)
    raw([envelope(6, "py-client", 7014), pack([1, 5, [["w", [1] * (MAX_RANK + 1), 0]]]),
         blob([0.0])], "a tensor of rank max_tensor_rank + 1", "too_many", 7014)
    raw([envelope(5, "py-client", 7015),
         pack([0, 1, False, layout, [["p%d" % i, 0.5] for i in range(MAX_SCORES + 1)]]),
         blob(weights)], "a score row of max_score_entries + 1", "too_many", 7015)
    raw([envelope(7, "py-client", 7016), pack([MAX_EMBED + 1, 1]), blob([0.0] * (MAX_EMBED + 1))],
        "EmbedReply rows max_embed_rows + 1", "too_many", 7016)
    raw([envelope(6, "py-client", 7017), pack([1, 5, [["w", [3], 0]]]), blob([1, 2, 3])],
        "an EmbedRequest of another layout", "layout_mismatch", 7017)
    raw([envelope(6, "py-client", 7018), pack([1, 5, layout]), blob(weights[:-1])],
        "a blob one float short", "layout_mismatch", 7018)
    raw([envelope(8, "py-client", 7019), pack([True, float("nan"), 0.0])], "a NaN float64",
        "non_finite", 7019)
    bad = list(weights)
    bad[3] = float("inf")
    raw([envelope(6, "py-client", 7020), pack([1, 5, layout]), blob(bad)], "an Inf weight",
        "non_finite", 7020)
    raw([envelope(9, "bad id", 7021), pack([1])], "a sender id with a space", "invalid_argument",
        7021)
    raw([envelope(9, "x" * 65, 7022), pack([1])], "a sender id of 65 characters",
        "invalid_argument", 7022)
    raw([envelope(3, "py-client", 7023), pack([[["-dash", "tcp://127.0.0.1:1", ""]]])],
        "a PeerInfo id starting with '-'", "invalid_argument", 7023)
    raw([envelope(1, "conf-node", 7024), pack([silent_endpoint, architecture, "x", "", 1])],
        "a Hello claiming the node's own id", "invalid_argument", 7024)
    raw([envelope(1, "py-client", 7025), pack(["tcp://300.1.2.3:5555", architecture, "x", "", 1])],
        "a Hello with an invalid listen_endpoint", "invalid_argument", 7025)
    raw([envelope(1, "py-other", 7026), pack([silent_endpoint, "mlp/10/784/1", "x", "", 1])],
        "a Hello with another architecture", "refused", 7026)
    # ---- the rules PROTOCOL.md "Refusals in detail" settles ---------------------------------
    raw([envelope(9, "x" * (MAX_STRING_BYTES + 1), 7030), pack([1])],
        "a sender above max_string_bytes", "too_large", 7030)
    raw([envelope(9, "py-client", 7031, version=1, min_version=2), pack([1])],
        "min_version above protocol_version", "malformed", 7031)
    raw([envelope(9, "py-client", 7032), pack([1] * (MAX_TENSORS + MAX_PEERS + 1))],
        "an array of max_tensors + max_peers + 1 elements", "too_many", 7032)
    raw([envelope(200, "bad id", 7033, magic=0xDEADBEEF), pack([1])],
        "bad magic, unknown type and bad sender at once", "bad_magic", 7033)
    raw([envelope(200, "bad id", 7034), pack([1])], "unknown type and bad sender at once",
        "unknown_type", 7034)
    raw([envelope(9, "bad id", 7035), pack([1]), b"", b"", b""],
        "5 frames and a bad sender at once", "too_many", 7035)
    # PROTOCOL.md, "Node ids": an id that is not UTF-8 breaks the id rule (invalid_argument).
    raw([with_raw_str(envelope(9, "py-@@", 7036), "py-@@", b"py-\xff\xfe"), pack([1])],
        "a sender that is not UTF-8", "invalid_argument", 7036)
    raw([envelope(3, "py-client", 7037),
         with_raw_str(pack([[["py-@@", "tcp://127.0.0.1:1", ""]]]), "py-@@", b"py-\xff\xfe")],
        "a PeerInfo id that is not UTF-8", "invalid_argument", 7037)
    # "A list's count before its entries".
    raw([envelope(4, "py-client", 7038), b"\x94\x00\xc2\xc2\xdd\xff\xff\xff\xff"],
        "accepts whose header claims 2^32 - 1 entries, none following", "too_many", 7038)
    raw([envelope(4, "py-client", 7039), b"\x94\x00\xc2\xc2\xdc\x00\x64\x01\x02"],
        "accepts whose header claims 100 entries, 2 following", "malformed", 7039)
    raw([envelope(4, "py-client", 7040), pack([0, False, False, [1] * 16 + [300]])],
        "17 accepts entries, the last above 255", "too_many", 7040)
    # "Limits": EmdDecision.accepts holds at most max_peers ids.
    raw([envelope(8, "py-client", 7041),
         pack([True, 0.5, 0.25, ["n%d" % i for i in range(MAX_PEERS + 1)]])],
        "EmdDecision.accepts of max_peers + 1", "too_many", 7041)
    for version, what in ((VERSION, "a Goodbye from a stranger"),
                          (1, "a Goodbye from a stranger in a version-1 envelope")):
        rid, reply = client.ask("Goodbye", ["leaving"], sender="py-stranger", version=version,
                                min_version=1)
        check(reply is not None and reply.type == TYPES["Goodbye"], what + " is acknowledged",
              reply and reply.name)
    rid, reply = client.ask("Ping", [4])
    check(reply is not None and reply.type == TYPES["Pong"],
          "the node serves on after a stranger's Goodbye")

    started = time.time()
    reply = client.send([envelope(4, "py-client", 7027), pack([10 ** 9, True])], timeout=60)
    held = time.time() - started
    if check(reply is not None, "GetModel{wait} for a future round is answered"):
        check_error(reply, "timeout", 7027, "GetModel{wait} past the hold limit")
        check(held >= 0.9 * ROUND_DEADLINE_S,
              "the request was held for the node's round_deadline_s", "%.2f s" % held)

    # A frame above twice max_message_bytes: the connection is closed and nothing is answered;
    # the node serves a new connection.
    reply = client.send([envelope(9, "py-client", 7028), b"\0" * (2 * MAX_MESSAGE_BYTES + 1)],
                        timeout=3)
    check(reply is None, "a frame above twice max_message_bytes gets no reply", reply and reply.name)
    client.reconnect()
    rid, reply = client.ask("Ping", [3])
    check(reply is not None and reply.type == TYPES["Pong"], "the node serves on afterwards")

    # unavailable and unknown_sender: the secure node (no signatures; key bound to py-client).
    secure_client = Client(context, secure_endpoint, "py-client",
                           curve=(node_public.encode(), client_public, client_secret))
    def secure_up():
        if secure.poll() is not None:
            return None
        reply = secure_client.ask("Ping", [1], timeout=1.0)[1]
        if reply is None:
            secure_client.reconnect()
        return reply
    up = wait_for(secure_up, 240, step=0.5)
    if check(up is not None, "the secure node answers over CURVE"):
        rid, reply = secure_client.ask("GetSignature", [])
        if check(reply is not None, "GetSignature to a node without signatures is answered"):
            check_error(reply, "unavailable", rid, "GetSignature without signatures")
        rid, reply = secure_client.ask("Hello", [silent_endpoint, architecture, "x",
                                                 client_public.decode(), 1], sender="impostor")
        if check(reply is not None, "a Hello claiming another id than the key's is answered"):
            check_error(reply, "unknown_sender", rid, "Hello claiming another id over a bound key")
        rid, reply = secure_client.ask("Ping", [1], sender="impostor")
        if check(reply is not None, "any request claiming another id is answered"):
            check_error(reply, "unknown_sender", rid, "Ping claiming another id over a bound key")
        rid, reply = secure_client.ask("Hello", [silent_endpoint, architecture, "x",
                                                 client_public.decode(), 1])
        check(reply is not None and reply.type == TYPES["HelloAck"] and
              Z85_KEY.match(reply.body[3]), "the key's own id is greeted, with the node's key",
              reply and reply.body)
        # "Top-k update chains": the secure node sends topk. Asked from an estimate it does not
        # have (lineage 999), it answers with the base whole and its updates; this script
        # rebuilds the estimate in float32 and checks the chain's CRC-32.
        rid, reply = secure_client.ask("GetModel", [0, True, False, [CODECS["topk"]], [999, 0]],
                                       timeout=60)
        if check(reply is not None and reply.type == TYPES["Model"] and len(reply.body) == 8 and
                 reply.body[6] == CODECS["topk"] and len(reply.frames) == 3,
                 "a GetModel accepting topk with an estimate: Model.encoding = 3 and its chain",
                 reply and (reply.name, reply.body[5:] if reply.body else None)):
            start, first, last, checksum, has_base = reply.body[7]
            count = sum(math.prod(t[1]) for t in reply.body[3])
            try:
                items = chain_items(reply.blobs[0])
                base = items[0]
                codec, _, _, n = struct.unpack_from("<BBHI", base, 0)
                estimate = list(floats(base[8:]))
                check(has_base and start == first and codec == CODECS["none"] and n == count and
                      len(estimate) == count, "the chain starts with the base whole",
                      (has_base, start, first, codec, n, count))
                for update in items[1:]:
                    estimate = [f32(a + b) for a, b in zip(estimate, topk_update(update, count))]
                ks = [struct.unpack_from("<I", update, 8)[0] for update in items[1:]]
                check(all(k == round_half_away(TOPK_FRACTION * count) for k in ks),
                      "each top-k blob keeps k = round(f * n)", (ks, TOPK_FRACTION, count))
                check(len(items) - 1 == last - first,
                      "one update per round after the base", (len(items), first, last))
                check(zlib.crc32(blob(estimate)) == checksum,
                      "the rebuilt estimate matches the chain's CRC-32",
                      (zlib.crc32(blob(estimate)), checksum))
                rid, again = secure_client.ask("GetModel",
                                               [0, False, False, [CODECS["topk"]], [start, last]])
                check(again is not None and again.type == TYPES["Model"] and
                      again.body[7][4] is False and again.body[7][1] == last,
                      "holding the estimate, the next reply chains from it without the base",
                      again and again.body[7])
            except (ValueError, struct.error, IndexError) as e:
                check(False, "the top-k chain follows PROTOCOL.md", e)
    check(set(SENT_CODES) <= seen_codes, "every error code a node sends was provoked",
          sorted(set(SENT_CODES) - seen_codes))

    # ---- versions ----------------------------------------------------------------------------
    rid, reply = client.ask("Ping", [11], version=1, min_version=1)
    if check(reply is not None and reply.type == TYPES["Pong"], "a version-1 peer is served"):
        check(reply.version == VERSION and reply.min_version == 1,
              "the answer says %d, still speaking 1" % VERSION, (reply.version, reply.min_version))
    rid, reply = client.ask("Ping", [12], version=7, min_version=2)
    check(reply is not None and reply.type == TYPES["Pong"],
          "a future peer that still speaks 2 is served", reply and reply.name)

    # /status stays valid JSON after all this, and counts the refusals by code.
    with urllib.request.urlopen("http://127.0.0.1:%d/status" % http_port, timeout=10) as r:
        status = json.loads(r.read().decode("utf-8"))
    codes = status["counters"]["rejected_by_code"]
    check(codes.get("too_large", 0) >= 3 and codes.get("malformed", 0) >= 4,
          "/status counts the refusals by code", codes)
    check("py-client" not in [p["id"] for p in status["peers"] if p["liveness"] != "candidate"],
          "the client that never answered is only a candidate", status["peers"])
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % http_port, timeout=10) as r:
        metrics = r.read().decode("utf-8")
    check('code="too_large"' in metrics, "/metrics counts too_large")

    # ---- Goodbye when the node stops -------------------------------------------------------
    plain.send_signal(signal.SIGTERM)
    try:
        code = plain.wait(60)
    except subprocess.TimeoutExpired:
        code = None
    check(code == 0, "the node exits 0 on SIGTERM", code)
    goodbyes = peer.requests("Goodbye")
    if check(len(goodbyes) == 1, "the node said Goodbye to its version-2 peer", len(goodbyes)):
        check(goodbyes[0].body == ["stopped"] and goodbyes[0].sender == "conf-node" and
              len(goodbyes[0].frames) == 2, "Goodbye = [reason]", goodbyes[0].body)
    check(old_peer.requests("Hello") and not old_peer.requests("Goodbye"),
          "no Goodbye to a peer that announced version 1")
    secure.send_signal(signal.SIGTERM)
    try:
        secure.wait(60)
    except subprocess.TimeoutExpired:
        pass


if __name__ == "__main__":
    sys.exit(main())
