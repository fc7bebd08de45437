"""A small fake group coordinator, speaking 0.9's group requests, that stops answering
heartbeats when told to: a coordinator gone silent on an open connection, which no request
timeout shorter than the client's (30 s by default) notices.

It makes itself the coordinator, makes the member a follower of a leader named "leader", and
assigns it every partition of the topic it serves; LeaveGroup is answered. Requests are read and answers written with kafka-python's protocol
classes. Any other request closes the connection.
"""

from __future__ import annotations

import struct
import threading

from kafka.protocol.consumer.group import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse

from support.fake_broker import FakeBroker
from zkconsumer.kafka.protocol.consumer_protocol import Assignment, encode_assignment
from zkconsumer.model import TopicPartition

FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP = 10, 11, 14, 12, 13


class StallingCoordinator(FakeBroker):
    def __init__(self, topic: str, partitions: int) -> None:
        super().__init__("stalling-coordinator")
        self._assignment = encode_assignment(Assignment(0, tuple(
            TopicPartition(topic, p) for p in range(partitions))))
        self.stalled = threading.Event()
        self.heartbeats_unanswered = 0

    def answer(self, frame: bytes) -> bytes | None:
        api_key, _version, correlation_id = struct.unpack_from(">hhi", frame)
        if api_key == HEARTBEAT and self.stalled.is_set():
            self.heartbeats_unanswered += 1
            return b""
        response = self._response(api_key)
        if response is None:
            return None
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True))

    def _response(self, api_key: int):
        if api_key == FIND_COORDINATOR:
            return FindCoordinatorResponse[0](error_code=0, node_id=0, host="127.0.0.1",
                                              port=self.port)
        if api_key == JOIN_GROUP:
            return JoinGroupResponse[0](error_code=0, generation_id=1, protocol_name="range",
                                        leader="leader", member_id="member-1", members=[])
        if api_key == SYNC_GROUP:
            return SyncGroupResponse[0](error_code=0, assignment=self._assignment)
        if api_key == HEARTBEAT:
            return HeartbeatResponse[0](error_code=0)
        if api_key == LEAVE_GROUP:
            return LeaveGroupResponse[0](error_code=0)
        return None
