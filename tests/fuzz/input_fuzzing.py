"""Fuzzing the parsers of untrusted bytes other than records: what a broker says during a SASL
login, the protocol codec's responses, znode data (decoded, then written back out as every
renderer would), offset files and offsets JSON, and the consumer protocol's subscription and
assignment bytes that other clients in a group write. Each is a `harness.Target`.

An input is one selector byte, naming the entry point (and, for SASL, the mechanism and the
login's versions), then the bytes that entry point reads. Seeds are valid inputs of every
entry point; mutations flip and set bytes, write absurd numbers where lengths and counts live,
splice in the text that broke parsers before (escaped lone surrogates, other scripts' digits,
forty-digit numbers, nesting thousands deep), cut, and splice from other seeds. The one outcome
allowed besides a value is the entry point's named error, on one line; anything else, a second
on one input, or memory past the harness's bound is a finding.
"""

from __future__ import annotations

import dataclasses
import json
import random
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' support package

from support.kafka_answers import decode_answer, valid_answers  # noqa: E402
from support.sasl_front import (  # noqa: E402
    OAuthBearerServer,
    PlainServer,
    ScramServer,
    StaticTokenProvider,
    scram_credential,
    unsecured_token,
)
from support.znode_samples import DECODERS, VALID  # noqa: E402

from zkconsumer.admin.offset_files import (  # noqa: E402
    OffsetFileError,
    format_json,
    format_text,
    offsets_from_json,
    offsets_to_json,
    read_offsets_file,
)
from zkconsumer.errors import ConfigError, ZnodeDataError  # noqa: E402
from zkconsumer.kafka.errors import GroupMetadataError  # noqa: E402
from zkconsumer.kafka.protocol.codec import ProtocolError  # noqa: E402
from zkconsumer.kafka.protocol.consumer_protocol import (  # noqa: E402
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from zkconsumer.kafka.protocol.sasl import (  # noqa: E402
    Credentials,
    Kerberos,
    OAuthBearer,
    SaslExchange,
    SaslLoginError,
    SaslVersions,
)
from zkconsumer.model import TopicPartition  # noqa: E402

HUGE = (-2, -1, 0, 1, 0x7FFF, -0x8000, 0x7FFFFFFF, -0x80000000, 1 << 20)
SPLICED = [b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", "\u2460".encode(), "\u0663".encode(),
           b"9" * 40, b"214748364", b"16385", b"-5", b"2147483648", b"9223372036854775808",
           b"1e999", b"NaN", b"[" * 3000, b'{"a":' * 3000, b"\x00", b"\xff\xfe", b'"', b",",
           b"=", b"\n", b"r=", b",i=", b",s=", b"e=", b"v=", b"_", b" ", b"null"]
MAX_ERROR_LINE = 400


# -- mutations, shared by every target here ---------------------------------------------------

def _mutated(rng: random.Random, corpus: list[bytes]) -> bytes:
    """A seed's body damaged one to four times; its selector byte is kept, so the damage
    reaches the entry point the seed was made for (and now and then another)."""
    seed = rng.choice(corpus)
    selector, data = seed[:1], bytearray(seed[1:])
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(8)
        position = rng.randrange(len(data) + 1)
        if kind == 0 and data:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 2:
            layout = rng.choice([">h", ">i"])
            value = rng.choice(HUGE + (rng.randrange(-100, 100),))
            if position + struct.calcsize(layout) <= len(data) and \
                    -(1 << (8 * struct.calcsize(layout) - 1)) <= value < \
                    1 << (8 * struct.calcsize(layout) - 1):
                struct.pack_into(layout, data, position, value)
        elif kind in (3, 4):
            token = rng.choice(SPLICED)
            cut = rng.randrange(4) if kind == 4 else 0
            data[position:position + cut] = token
        elif kind == 5:
            del data[position:]
        elif kind == 6:
            other = rng.choice(corpus)[1:]
            start = rng.randrange(len(other) + 1)
            data[position:] = other[start:start + rng.randrange(1, 200)]
        else:
            piece = data[position:position + rng.randrange(1, 64)]
            data[position:position] = piece * rng.randint(1, 3)
    if rng.random() < 0.05:
        selector = bytes([rng.randrange(256)])
    return selector + bytes(data)


def _one_line(error: Exception) -> str:
    """The error as the CLI would print it: one line, of a readable length, or a finding."""
    text = str(error)
    if "\n" in text or "\r" in text or len(text) > MAX_ERROR_LINE:
        raise AssertionError(f"{type(error).__name__} is not one short line: {text[:600]!r}")
    return f"{type(error).__name__}: {text}"


def _framed(parts: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(part)) + part for part in parts)


def _unframed(data: bytes) -> list[bytes]:
    """Length-prefixed parts, leniently: a length past the end takes what is left."""
    parts, position = [], 0
    while position + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, position)
        position += 4
        end = len(data) if size < 0 else min(len(data), position + size)
        parts.append(data[position:end])
        position = end
    return parts


# -- SASL: the broker's answers to one login --------------------------------------------------

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LOGIN_VERSIONS = (SaslVersions(1, 1), SaslVersions(1, None), SaslVersions(0, None))
NONCE, PASSWORD = "fuzzn0nce", "fuzz-Pa55"
CORRELATION = b"\x00\x00\x00\x07"


def _handshake_answer(version: int, error: int = 0, enabled: tuple[str, ...] = MECHANISMS
                      ) -> bytes:
    names = b"".join(struct.pack(">h", len(name)) + name.encode() for name in enabled)
    return CORRELATION + struct.pack(">hi", error, len(enabled)) + names


def _authenticate_answer(token: bytes, error: int = 0, message: str | None = None) -> bytes:
    text = b"\xff\xff" if message is None else struct.pack(">h", len(message)) + message.encode()
    return CORRELATION + struct.pack(">h", error) + text + struct.pack(">i", len(token)) + token \
        + struct.pack(">q", 0)


def _login(selector: int) -> SaslExchange:
    mechanism = MECHANISMS[selector // len(LOGIN_VERSIONS) % len(MECHANISMS)]
    return SaslExchange("fuzzed:9093", Credentials(mechanism, "alice", PASSWORD),
                        LOGIN_VERSIONS[selector % len(LOGIN_VERSIONS)], nonce=NONCE)


def _sasl_seeds() -> list[bytes]:
    """Each mechanism's whole login against the test front's independent server, as the
    broker's answers (the handshake's, then one per token), in every framing; and refusals."""
    seeds = []
    for selector in range(len(MECHANISMS) * len(LOGIN_VERSIONS)):
        exchange = _login(selector)
        mechanism = MECHANISMS[selector // len(LOGIN_VERSIONS)]
        if mechanism == "PLAIN":
            server: PlainServer | ScramServer = PlainServer({"alice": PASSWORD})
        else:
            hash_name = "sha256" if mechanism.endswith("256") else "sha512"
            server = ScramServer(mechanism, {"alice": scram_credential(hash_name, PASSWORD)})
        bare = exchange.versions.authenticate is None
        answers = [_handshake_answer(exchange.versions.handshake)]
        token = exchange.handshake_answered(answers[0])
        while token is not None:
            broker_token, _ = server.respond(token)
            answers.append(broker_token if bare else _authenticate_answer(broker_token))
            token = (exchange.token_answered(broker_token) if bare
                     else exchange.authenticate_answered(answers[-1]))
        seeds.append(bytes([selector]) + _framed(answers))
    refused = _authenticate_answer(b"", 58, "Authentication failed: Invalid username or password")
    seeds.append(bytes([0]) + _framed([_handshake_answer(1), refused]))
    seeds.append(bytes([3]) + _framed([_handshake_answer(1, 33, ("PLAIN",))]))
    return seeds


def _sasl_exercise(raw: bytes) -> list[str]:
    return _login_outcome(_login(raw[0]), _unframed(raw[1:])) if raw else ["empty"]


def _login_outcome(exchange: SaslExchange, answers: list[bytes]) -> list[str]:
    """The answers through one login, as `sasl_login` hands them to the exchange (in bare
    frames, none after the login's last token)."""
    bare = exchange.versions.authenticate is None
    try:
        if not answers:
            return ["no answer"]
        token = exchange.handshake_answered(answers[0])
        for answer in answers[1:]:
            if token is None or (bare and exchange.final):
                break
            token = exchange.token_answered(answer) if bare else \
                exchange.authenticate_answered(answer)
        return [f"logged in: {exchange.done or (bare and exchange.final)}"]
    except SaslLoginError as refused:
        return [_one_line(refused)]


# -- SASL: the broker's answers to an OAUTHBEARER or GSSAPI login ------------------------------

TOKEN = unsecured_token("alice")


class _FuzzContext:
    """A GSS-API context that is established after one step and whose wrapping is a 4-byte
    marker, so that the fuzzed bytes reach the security-layer offer's checks."""

    MARK = b"MIC:"

    def __init__(self, service: str) -> None:
        self.complete = False

    def step(self, token: bytes | None) -> bytes | None:
        self.complete = True
        return b"ap-req" if token is None else None

    def wrap(self, message: bytes) -> bytes:
        return self.MARK + message

    def unwrap(self, message: bytes) -> bytes:
        if not message.startswith(self.MARK):
            raise SaslLoginError("the broker's security-layer offer failed: bad MIC")
        return message[len(self.MARK):]


def _token_login(selector: int) -> SaslExchange:
    versions = LOGIN_VERSIONS[selector % len(LOGIN_VERSIONS)]
    if selector // len(LOGIN_VERSIONS) % 2 == 0:
        return SaslExchange("fuzzed:9093", OAuthBearer(StaticTokenProvider(TOKEN, {"x": "1"})),
                            versions)
    return SaslExchange("fuzzed:9093", Kerberos("kafka", None, new_context=_FuzzContext),
                        versions)


def _token_seeds() -> list[bytes]:
    """Each mechanism's whole login in every framing, as the broker's answers: OAUTHBEARER
    against the test front's server, GSSAPI's offer of no security layer."""
    seeds = []
    for selector in range(2 * len(LOGIN_VERSIONS)):
        exchange = _token_login(selector)
        bare = exchange.versions.authenticate is None
        answers = [_handshake_answer(exchange.versions.handshake)]
        token = exchange.handshake_answered(answers[0])
        if selector // len(LOGIN_VERSIONS) == 0:
            broker_tokens = [OAuthBearerServer({TOKEN: "alice"}).respond(token)[0]]
        else:
            broker_tokens = [b"", _FuzzContext.MARK + b"\x01\x00\x10\x00", b""]
        for broker_token in broker_tokens[:2 if bare and len(broker_tokens) > 1 else None]:
            answers.append(broker_token if bare else _authenticate_answer(broker_token))
        seeds.append(bytes([selector]) + _framed(answers))
    return seeds


def _token_exercise(raw: bytes) -> list[str]:
    return _login_outcome(_token_login(raw[0]), _unframed(raw[1:])) if raw else ["empty"]


# -- the protocol codec's responses -----------------------------------------------------------

_ANSWERS = valid_answers()


def _responses_exercise(raw: bytes) -> list[str]:
    if not raw:
        return ["empty"]
    decoder, version, _ = _ANSWERS[raw[0] % len(_ANSWERS)]
    try:
        decode_answer(decoder, version, raw[1:])
        return [f"{decoder} v{version}: decoded"]
    except ProtocolError as refused:
        return [_one_line(refused)]


# -- znodes: decoded, then written out as renderers write them --------------------------------

_ZNODE_KINDS = sorted(DECODERS)


def _written_out(value: object) -> None:
    """What the CLI's text, `--json`, the exporter's labels and Burrow's JSON do with a decoded
    znode: every string in it written as UTF-8, the whole as JSON, and the znode encoded again
    by the project's own encoder where it has one."""
    encode = getattr(value, "encode", None)
    if callable(encode) and not isinstance(value, str):
        encode()
    pending = [dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    json.dumps(dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value,
               ensure_ascii=False, default=str).encode("utf-8")


def _znode_exercise(raw: bytes) -> list[str]:
    if not raw:
        return ["empty"]
    kind = _ZNODE_KINDS[raw[0] % len(_ZNODE_KINDS)]
    try:
        value = DECODERS[kind]("/fuzzed/znode", raw[1:])
    except ZnodeDataError as refused:
        return [_one_line(refused)]
    _written_out(value)
    return [f"{kind}: decoded"]


# -- offset files and offsets JSON ------------------------------------------------------------

_SAMPLE = {"g": {TopicPartition("orders", 0): 42, TopicPartition("orders", 1): -1},
           "h": {TopicPartition("audit", 3): 7}}
_OFFSET_ENTRIES = ("offsets import file", "startingOffsets JSON")
_scratch: list[Path] = []


def _offset_files_exercise(raw: bytes) -> list[str]:
    if not raw:
        return ["empty"]
    entry = _OFFSET_ENTRIES[raw[0] % len(_OFFSET_ENTRIES)]
    try:
        if entry == "offsets import file":
            if not _scratch:
                _scratch.append(Path(tempfile.mkdtemp(prefix="zkc-fuzz-")) / "offsets")
            _scratch[0].write_bytes(raw[1:])
            read_offsets_file(_scratch[0])
        else:
            offsets_from_json(raw[1:].decode("utf-8", "replace"), "startingOffsets", "fuzzing")
        return [f"{entry}: read"]
    except (OffsetFileError, ConfigError) as refused:
        return [_one_line(refused)]


def _offset_files_seeds() -> list[bytes]:
    return [b"\x00" + format_text(_SAMPLE).encode(), b"\x00" + format_json(_SAMPLE).encode(),
            b"\x01" + offsets_to_json(_SAMPLE["g"]).encode(),
            b"\x01" + b'{"orders":{"0":-2,"1":-1,"2":17}}']


# -- a group's member metadata: other clients' subscriptions and their leader's assignments ----

def _group_metadata_exercise(raw: bytes) -> list[str]:
    """What a member reads as its group's leader (each member's subscription) and as a
    follower (the leader's assignment); decoded, then encoded again as a leader passes it on."""
    if not raw:
        return ["empty"]
    try:
        if raw[0] % 2 == 0:
            subscription = decode_subscription(raw[1:], "m-fuzzed")
            encode_subscription(subscription)
            return [f"subscription v{subscription.version}: {len(subscription.topics)} topics"]
        assignment = decode_assignment(raw[1:], "group leader 'm-fuzzed'")
        encode_assignment(assignment)
        return [f"assignment v{assignment.version}: {len(assignment.partitions)} partitions"]
    except GroupMetadataError as refused:
        return [_one_line(refused)]


def _group_metadata_seeds() -> list[bytes]:
    owned = (TopicPartition("orders", 1), TopicPartition("audit", 0))
    subscriptions = [b"\x00" + encode_subscription(Subscription(
        version, ("orders", "audit"), b"user" if version % 2 else None, owned if version else (),
        7 if version >= 2 else -1, "rack-a" if version >= 3 else None)) for version in range(4)]
    assignments = [b"\x01" + encode_assignment(Assignment(
        version, owned, b"u" if version else None)) for version in range(4)]
    return subscriptions + assignments


def targets() -> dict:
    from harness import Target

    def target(name: str, seeds: Callable[[], list[bytes]],
               exercise: Callable[[bytes], list[str]]) -> Target:
        return Target(name, seeds, _mutated, exercise)

    return {
        "sasl": target("sasl", _sasl_seeds, _sasl_exercise),
        "sasl-tokens": target("sasl-tokens", _token_seeds, _token_exercise),
        "responses": target("responses", lambda: [bytes([index]) + payload for index, (
            _, _, payload) in enumerate(_ANSWERS)], _responses_exercise),
        "znodes": target("znodes", lambda: [bytes([_ZNODE_KINDS.index(kind)]) + data
                                            for kind in _ZNODE_KINDS for data in VALID[kind]],
                         _znode_exercise),
        "offset-files": target("offset-files", _offset_files_seeds, _offset_files_exercise),
        "group-metadata": target("group-metadata", _group_metadata_seeds,
                                 _group_metadata_exercise),
    }
