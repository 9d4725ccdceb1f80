#!/usr/bin/env python3
"""A small Astra client in Python: standard library + msgpack (Debian: python3-msgpack).

It speaks wire protocol v1 (docs/protocol.md, schema/astra-protocol-v1.json) directly: find the
daemon through its discovery record, connect to the Unix socket, authenticate, then call methods,
answer server requests and read notifications.

Run as a script it does one whole session: initialize -> initialized -> session/create ->
session/subscribe -> lease/acquire -> turn/start (approvalPolicy 'ask') -> approve the
approval/request -> print session/event notifications until turn.completed.

    python3 astra_client.py [--command 'echo hello from python'] [--deny] [--json] [--trace-frames] [--timeout 30]
    python3 astra_client.py --engine chat --model llama3.1 [--base-url URL] --command 'list the files here'

A chat turn prints message.delta/message.completed (with its finishReason), tool.call, tool.result,
usage and error (code, retryable) events as readable lines; an event type it does not know prints
as its JSON data.

Exit status: 0 when the turn completed, 1 on an error (the message says what to do), 3 when no
daemon is running (start one with `astra daemon start`).
"""
import argparse
import base64
import json
import os
import socket
import struct
import sys
import time
import uuid

try:
    import msgpack
except ImportError:  # pragma: no cover - depends on the machine
    sys.stderr.write("astra_client: the msgpack module is missing; install it with `apt-get install python3-msgpack`\n")
    sys.exit(2)

PROTOCOL_VERSION = 1
CLIENT_NAME = "astra-python"
CLIENT_VERSION = "0.1.0"
HEADER = struct.Struct(">I")
# Until initialize answers with this connection's real limits, assume the protocol's.
DEFAULT_MAX_REQUEST_BYTES = 131072
DEFAULT_MAX_FRAME_BYTES = 8388608
FORBIDDEN_KEYS = frozenset(["__proto__", "__proto_", "constructor", "prototype"])


class AstraError(Exception):
    """An error from the daemon (or raised locally with the same reasons)."""

    def __init__(self, reason, message, code=None, data=None):
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.data = data or {}

    def __str__(self):
        return "%s (%s)" % (self.args[0], self.reason)


# ---------------------------------------------------------------- discovery (DESIGN.md §4)

def runtime_dir(env=None):
    """$ASTRA_HOME/run, else $XDG_RUNTIME_DIR/astra (absolute only), else <tmpdir>/astra-<uid>."""
    env = os.environ if env is None else env
    home = env.get("ASTRA_HOME")
    if home:
        return os.path.join(os.path.abspath(home), "run")
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "astra")
    # Node's os.tmpdir(): TMPDIR, TMP, TEMP, else /tmp, without a trailing slash.
    tmp = env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or "/tmp"
    if len(tmp) > 1 and tmp.endswith("/"):
        tmp = tmp[:-1]
    return os.path.join(tmp, "astra-%d" % os.getuid())


def read_record(env=None):
    """Reads and checks daemon.json; raises AstraError daemon_not_running or invalid_record."""
    path = os.path.join(runtime_dir(env), "daemon.json")
    try:
        with open(path, "r", encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        raise AstraError("daemon_not_running", "no daemon is running (no %s); start one with `astra daemon start`" % path)
    except ValueError as e:
        raise AstraError("invalid_record", "%s is not valid JSON (%s); restart the daemon with `astra daemon restart`" % (path, e))
    expected = {"instanceId": str, "pid": int, "endpoint": str, "token": str, "protocolVersion": int}
    for key, kind in expected.items():
        if not isinstance(record.get(key), kind) or isinstance(record.get(key), bool):
            raise AstraError("invalid_record", "%s: field %r is missing or not a %s; restart the daemon with `astra daemon restart`" % (path, key, kind.__name__))
    return record


# ---------------------------------------------------------------- framing and MessagePack

def _reject_ext(code, data):
    raise AstraError("invalid_request", "MessagePack extension type %d is not part of the protocol" % code)


def _check_plain(value, depth=0):
    if depth > 64:
        raise AstraError("invalid_request", "the message nests deeper than 64 levels")
    if isinstance(value, dict):
        for k, v in value.items():
            if k in FORBIDDEN_KEYS:
                raise AstraError("forbidden_key", "the message has the forbidden key %r" % k)
            _check_plain(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_plain(v, depth + 1)


def encode_frame(message, max_payload_bytes):
    payload = msgpack.packb(message, use_bin_type=True)
    if len(payload) > max_payload_bytes:
        # Refuse locally, before sending, so the connection stays usable (DESIGN.md §3).
        raise AstraError("frame_too_large", "the message is %d bytes; the limit for this direction is %d" % (len(payload), max_payload_bytes),
                         data={"size": len(payload), "limit": max_payload_bytes})
    return HEADER.pack(len(payload)) + payload


def decode_payload(payload):
    try:
        value = msgpack.unpackb(payload, raw=False, strict_map_key=True, ext_hook=_reject_ext, use_list=True)
    except AstraError:
        raise
    except Exception as e:
        raise AstraError("parse_error", "the daemon sent a frame that is not valid MessagePack: %s" % e)
    if not isinstance(value, dict):
        raise AstraError("invalid_request", "a message must be a map")
    _check_plain(value)
    return value


class Connection:
    """One authenticated connection. Not thread-safe: one thread drives it."""

    def __init__(self, sock, trace=None):
        self.sock = sock
        self.trace = trace  # a file to log every frame to (hex + meaning), or None
        self.max_request_bytes = DEFAULT_MAX_REQUEST_BYTES
        self.max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self.next_id = 1
        self.inbox = []  # notifications and server requests read while waiting for a response
        self.server_request_handlers = {}
        self.init = None

    # -- raw frames

    def _recv_exactly(self, n, deadline):
        chunks = []
        while n > 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AstraError("request_timeout", "no answer from the daemon in time")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(min(n, 1 << 20))
            except socket.timeout:
                raise AstraError("request_timeout", "no answer from the daemon in time")
            if not chunk:
                raise AstraError("connection_closed", "the daemon closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _trace(self, arrow, frame, message):
        if self.trace is not None:
            self.trace.write("%s %s\n  %s\n" % (arrow, frame.hex(" "), json.dumps(_jsonable(message), ensure_ascii=False)))
            self.trace.flush()

    def send(self, message):
        frame = encode_frame(message, self.max_request_bytes)
        self._trace(">", frame, message)
        self.sock.sendall(frame)

    def receive(self, timeout=30.0):
        """The next message from the daemon, as a dict."""
        deadline = time.monotonic() + timeout
        header = self._recv_exactly(HEADER.size, deadline)
        (length,) = HEADER.unpack(header)
        if length > self.max_frame_bytes:
            raise AstraError("frame_too_large", "the daemon announced a %d-byte frame; the limit is %d" % (length, self.max_frame_bytes))
        payload = self._recv_exactly(length, deadline)
        message = decode_payload(payload)
        self._trace("<", header + payload, message)
        return message

    # -- messages

    def notify(self, method, params=None):
        message = {"method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(self, method, params=None, timeout=30.0):
        """Sends a request and returns its result; raises AstraError for an error answer.
        Notifications that arrive meanwhile are queued for next_message(); server requests are
        answered by their handler at once (an approval must not wait behind our own request)."""
        rid = self.next_id
        self.next_id += 1
        message = {"id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            msg = self.receive(max(0.0, deadline - time.monotonic()))
            if "method" in msg:
                if msg.get("id") is not None:
                    self._answer_server_request(msg)
                else:
                    self.inbox.append(msg)
                continue
            if msg.get("id") != rid:
                continue  # an answer to nothing we are waiting for: ignore (protocol.md §4)
            if "error" in msg and msg["error"] is not None:
                err = msg["error"]
                data = err.get("data") or {}
                raise AstraError(data.get("reason", "unknown"), err.get("message", ""), err.get("code"), data)
            return msg.get("result")

    def on_server_request(self, method, handler):
        """handler(params) -> result dict; raise AstraError to answer with an error."""
        self.server_request_handlers[method] = handler

    def _answer_server_request(self, msg):
        handler = self.server_request_handlers.get(msg["method"])
        if handler is None:
            self.send({"id": msg["id"], "error": {"code": -32601, "message": "this client does not handle %s" % msg["method"],
                                                  "data": {"reason": "method_not_found"}}})
            return
        try:
            result = handler(msg.get("params") or {})
        except AstraError as e:
            self.send({"id": msg["id"], "error": {"code": e.code or -32603, "message": e.args[0], "data": {"reason": e.reason}}})
            return
        self.send({"id": msg["id"], "result": result})

    def next_message(self, timeout=30.0):
        """The next notification (server requests are answered on the way)."""
        deadline = time.monotonic() + timeout
        while not self.inbox:
            msg = self.receive(max(0.0, deadline - time.monotonic()))
            if "method" not in msg:
                continue  # a late answer to a request that already gave up
            if msg.get("id") is not None:
                self._answer_server_request(msg)
            else:
                self.inbox.append(msg)
        return self.inbox.pop(0)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def connect(client_name=CLIENT_NAME, env=None, timeout=10.0, trace=None):
    """Discovers the daemon, connects and completes the handshake (initialize + initialized)."""
    record = read_record(env)
    if record["protocolVersion"] != PROTOCOL_VERSION:
        raise AstraError("incompatible_protocol", "the daemon speaks protocol %d, this client %d; run `astra daemon restart`"
                         % (record["protocolVersion"], PROTOCOL_VERSION))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(record["endpoint"])
    except OSError as e:
        sock.close()
        raise AstraError("daemon_not_running", "cannot connect to %s (%s); start the daemon with `astra daemon start`" % (record["endpoint"], e))
    conn = Connection(sock, trace)
    try:
        conn.init = conn.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "token": record["token"],
            "clientInfo": {"name": client_name, "version": CLIENT_VERSION, "pid": os.getpid()},
            "instanceId": record["instanceId"],
        }, timeout=timeout)
        limits = conn.init.get("limits") or {}
        conn.max_request_bytes = limits.get("maxRequestBytes", DEFAULT_MAX_REQUEST_BYTES)
        conn.max_frame_bytes = limits.get("maxFrameBytes", DEFAULT_MAX_FRAME_BYTES)
        conn.notify("initialized")
    except Exception:
        conn.close()
        raise
    return conn


# ---------------------------------------------------------------- the demo session

def _jsonable(value):
    if isinstance(value, bytes):
        return {"$bin": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _short(text, limit=200):
    text = str(text).replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "... (%d chars)" % len(text)


def _describe(event):
    """One readable line for an event. Types this client does not know print as their JSON data, so a
    newer daemon's events never fail it (the protocol adds event types without a version bump)."""
    data = event.get("data") or {}
    if not isinstance(data, dict):
        return json.dumps(_jsonable(data), ensure_ascii=False, sort_keys=True)
    kind = event.get("type")
    if kind == "command.output" and isinstance(data.get("data"), bytes):
        return "%s %s" % (data.get("stream"), data["data"].decode("utf-8", "replace").rstrip("\n"))
    if kind == "message.delta":
        return _short(data.get("text", ""))
    if kind == "message.completed":
        return "(%s) %s" % (data.get("finishReason") or "no finish reason", _short(data.get("text", "")))
    if kind == "tool.call":
        return "%s %s %s" % (data.get("callId"), data.get("name"), _short(data.get("arguments", "")))
    if kind == "tool.result":
        code = data.get("exitCode")
        return ("%s %s%s %s" % (data.get("callId"), data.get("status"), "" if code is None else " exit %s" % code,
                                _short(data.get("output", "")))).rstrip()
    if kind == "usage":
        return "prompt %s tokens, completion %s tokens" % (data.get("promptTokens"), data.get("completionTokens"))
    if kind == "error":
        return "%s (%s): %s" % (data.get("code"), "retryable" if data.get("retryable") else "not retryable", data.get("message"))
    return json.dumps(_jsonable(data), ensure_ascii=False, sort_keys=True)


class StreamedText:
    """Gives a message.completed sent without its text back its text.

    A subscription with ``textFromDeltas: true`` gets a live message.completed whose text it already
    got as the turn's message.delta events as ``{text: "", textFromDeltas: true}``: its text is the
    concatenation of the turn's delta texts since its turn.started or previous message.completed.
    Feed every event of the subscription, in order, to ``apply``; it returns the event to use.
    """

    def __init__(self):
        self._parts = {}

    def apply(self, event):
        kind = event.get("type")
        data = event.get("data") or {}
        turn = data.get("turnId")
        if kind == "turn.started":
            self._parts[turn] = []
        elif kind == "message.delta":
            parts = self._parts.get(turn)
            if parts is not None:
                parts.append(data.get("text") or "")
        elif kind == "message.completed":
            parts = self._parts.get(turn)
            if parts is not None:
                self._parts[turn] = []
            if data.get("textFromDeltas") is True:
                if parts is None:
                    raise AstraError("internal_error", "message.completed #%s came without its text, but its deltas were not seen; "
                                     "subscribe again from seq %s" % (event.get("seq"), (event.get("seq") or 1) - 1))
                whole = {k: v for k, v in data.items() if k != "textFromDeltas"}
                whole["text"] = "".join(parts)
                event = dict(event, data=whole)
        elif kind == "turn.completed":
            self._parts.pop(turn, None)
        return event


def run_turn(command, decision="approve", as_json=False, timeout=30.0, out=sys.stdout, trace=None, engine=None, engine_options=None):
    deadline = time.monotonic() + timeout

    def left():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AstraError("request_timeout", "the turn did not complete within %.0f s" % timeout)
        return remaining

    def emit(kind, payload, text):
        if as_json:
            out.write(json.dumps({kind: _jsonable(payload)}, ensure_ascii=False) + "\n")
        else:
            out.write(text + "\n")
        out.flush()

    conn = connect(trace=trace)
    try:
        emit("connected", conn.init, "connected to daemon %s (pid %s, protocol %s) as %s" % (
            conn.init["instanceId"], conn.init["daemon"]["pid"], conn.init["protocolVersion"], conn.init["connectionId"]))

        def approve(params):
            emit("approval", dict(params, decision=decision), "approval asked for %r in %s -> %s" % (params.get("command"), params.get("cwd"), decision))
            return {"decision": decision}

        conn.on_server_request("approval/request", approve)
        create = {"title": "python client", "cwd": os.getcwd(), "approvalPolicy": "ask"}
        if engine:
            create["engine"] = engine
        if engine_options:
            create["engineOptions"] = engine_options
        session = conn.request("session/create", create, timeout=left())["session"]
        sid = session["id"]
        emit("session", session, "session %s created" % sid)
        lease = conn.request("lease/acquire", {"sessionId": sid}, timeout=left())
        # From seq 0: the backlog (session.created, lease.changed) arrives first, then session/replayed.
        # textFromDeltas: a streamed answer's text comes once, as its deltas (StreamedText puts it back).
        conn.request("session/subscribe", {"sessionId": sid, "sinceSeq": 0, "textFromDeltas": True}, timeout=left())
        streamed = StreamedText()
        turn = conn.request("turn/start", {"sessionId": sid, "epoch": lease["epoch"], "input": {"text": command},
                                           "idempotencyKey": str(uuid.uuid4())}, timeout=left())
        turn_id = turn["turnId"]
        last_seq = 0
        while True:
            msg = conn.next_message(left())
            if msg["method"] in ("session/closed", "session/invalidated") and (msg.get("params") or {}).get("sessionId") == sid:
                # The daemon ended the subscription (the session was deleted or archived, the daemon stopped, its journal is damaged).
                raise AstraError("subscription_closed", "the daemon ended the subscription: %s" % msg["params"].get("reason"))
            if msg["method"] != "session/event":
                continue  # session/replayed and others: nothing to do here; unknown ones are ignored
            event = msg.get("params") or {}
            if event.get("sessionId") != sid:
                continue
            if not isinstance(event.get("seq"), int) or event["seq"] <= last_seq:
                raise AstraError("invalid_request", "event seq %r after %d: events must arrive in order without duplicates" % (event.get("seq"), last_seq))
            last_seq = event["seq"]
            event = streamed.apply(event)
            emit("event", event, "#%d %s %s" % (event["seq"], event["type"], _describe(event)))
            data = event.get("data") or {}
            if event["type"] == "turn.completed" and data.get("turnId") == turn_id:
                return data
    finally:
        conn.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run one turn on the Astra daemon and print its events.")
    parser.add_argument("--command", default="echo hello from python", help="the turn's input: a command line for the shell engine, a message for chat (default: %(default)s)")
    parser.add_argument("--engine", choices=["shell", "chat"], help="the session's engine (default: the daemon's, shell)")
    parser.add_argument("--model", help="chat: the model name (default: the daemon's ASTRA_CHAT_MODEL)")
    parser.add_argument("--base-url", help="chat: the server's API base, e.g. http://127.0.0.1:11434/v1")
    parser.add_argument("--deny", action="store_true", help="deny the approval instead of approving it")
    parser.add_argument("--json", action="store_true", help="print one JSON object per line (bytes as {\"$bin\": base64})")
    parser.add_argument("--trace-frames", action="store_true", help="log every frame (hex and meaning) to stderr")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the turn (default: %(default)s)")
    args = parser.parse_args(argv)
    options = {k: v for k, v in (("model", args.model), ("baseUrl", args.base_url)) if v}
    if options and args.engine != "chat":
        parser.error("--model and --base-url are for --engine chat")
    try:
        result = run_turn(args.command, "deny" if args.deny else "approve", args.json, args.timeout,
                          trace=sys.stderr if args.trace_frames else None, engine=args.engine, engine_options=options or None)
    except AstraError as e:
        sys.stderr.write("astra_client: %s\n" % e)
        return 3 if e.reason == "daemon_not_running" else 1
    except OSError as e:
        sys.stderr.write("astra_client: %s; is the daemon running? (`astra daemon status`)\n" % e)
        return 1
    return 0 if result.get("status") == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
