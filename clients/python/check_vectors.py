#!/usr/bin/env python3
"""Checks the Astra wire test vectors with a second MessagePack implementation (Python msgpack).

For every <name>.json in the given directories (default: test/vectors next to this repo), reads
<name>.bin and checks: the 4-byte big-endian header equals the payload length, the payload decodes
(raw=False, strict_map_key, no extension types, exactly one value) to exactly the JSON meaning --
ints are ints (never floats), bins are bytes, strings are str, nil is None and absent stays absent --
and, for every vector the protocol accepts, that re-encoding the meaning with
msgpack.packb(use_bin_type=True) gives the same payload bytes.

Usage: check_vectors.py [DIR ...]    exit 0 when every vector passes, 1 otherwise.
"""
import base64
import json
import os
import struct
import sys

try:
    import msgpack
except ImportError:  # pragma: no cover - depends on the machine
    sys.stderr.write("check_vectors: the msgpack module is missing; install it with `apt-get install python3-msgpack`\n")
    sys.exit(2)

HEADER = struct.Struct(">I")


def from_meaning(value):
    """JSON meaning -> the value msgpack should decode to."""
    if isinstance(value, list):
        return [from_meaning(v) for v in value]
    if isinstance(value, dict):
        if list(value) == ["$bin"]:
            return base64.b64decode(value["$bin"], validate=True)
        if list(value) == ["$int"]:
            return int(value["$int"])
        return {k: from_meaning(v) for k, v in value.items()}
    return value


def reject_ext(code, data):
    raise ValueError("extension type %d is not part of the protocol" % code)


def same(a, b, path="$"):
    """Strict equality: type for type (True is not 1, 1.0 is not 1), key order included."""
    if type(a) is not type(b):
        return "%s: decoded %s %r, meaning says %s %r" % (path, type(a).__name__, a, type(b).__name__, b)
    if isinstance(a, dict):
        if list(a) != list(b):
            return "%s: keys %r, meaning says %r" % (path, list(a), list(b))
        for k in a:
            p = same(a[k], b[k], "%s.%s" % (path, k))
            if p:
                return p
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items, meaning says %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            p = same(x, y, "%s[%d]" % (path, i))
            if p:
                return p
        return None
    return None if a == b else "%s: decoded %r, meaning says %r" % (path, a, b)


def check_one(json_path):
    with open(json_path, "r", encoding="utf-8") as f:
        vector = json.load(f)
    with open(json_path[: -len(".json")] + ".bin", "rb") as f:
        frame = f.read()
    if len(frame) < HEADER.size:
        return "the frame is shorter than its 4-byte header"
    (length,) = HEADER.unpack_from(frame)
    payload = frame[HEADER.size:]
    if length != len(payload):
        return "the header says %d bytes but %d follow" % (length, len(payload))
    if vector.get("payloadBytes") != length:
        return "payloadBytes says %r, the frame has %d" % (vector.get("payloadBytes"), length)
    decoded = msgpack.unpackb(
        payload, raw=False, strict_map_key=True, ext_hook=reject_ext, use_list=True,
        max_bin_len=len(payload), max_str_len=len(payload),
    )
    expected = from_meaning(vector["message"])
    problem = same(decoded, expected)
    if problem:
        return problem
    # Astra's encoder writes the smallest form, as Python does, so valid messages re-encode to the
    # same bytes. Refused vectors may hold integers beyond 2^53, where encoders legitimately differ
    # (msgpackr writes a positive one as int64, Python as uint64).
    repacked = msgpack.packb(expected, use_bin_type=True)
    if repacked != payload and "rejectedWith" not in vector:
        at = next((i for i, (x, y) in enumerate(zip(repacked, payload)) if x != y), min(len(repacked), len(payload)))
        return "Python's encoding of the meaning differs from the vector at payload byte %d" % at
    return None


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = argv[1:] or [os.path.join(here, "..", "..", "test", "vectors")]
    checked = 0
    failed = 0
    for d in dirs:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json"))
        if not names:
            sys.stderr.write("check_vectors: no vectors in %s\n" % d)
            return 1
        for name in names:
            try:
                problem = check_one(os.path.join(d, name))
            except Exception as e:  # a decode failure is a failed vector, not a crash
                problem = "%s: %s" % (type(e).__name__, e)
            checked += 1
            if problem:
                failed += 1
                sys.stdout.write("FAIL %s: %s\n" % (name, problem))
    sys.stdout.write("%d vectors checked, %d failed\n" % (checked, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
