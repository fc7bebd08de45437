"""The errors of talking to Kafka: `FetchError`, which every fetch backend raises when fetching
cannot go on, and `ChannelError`, a connection that failed (which the protocol state reads too,
so it lives below both the channels and the protocol)."""

from zkconsumer.errors import ZkConsumerError, describe_error


class FetchError(ZkConsumerError):
    """The Kafka client could not be created, or fetching failed in a way no retry can fix."""


class ChannelError(Exception):
    """The connection failed or the broker answered out of order; the channel is closed.
    `closed_by_broker`: the broker ended the connection while an answer was awaited, which is
    also how a broker rejects a request version it does not speak. `timed_out`: no answer came
    in time on a connection that stayed open, which is how 0.9 treats ApiVersions; a reset or
    a close is not that."""

    def __init__(self, message: str, closed_by_broker: bool = False,
                 timed_out: bool = False) -> None:
        super().__init__(message)
        self.closed_by_broker = closed_by_broker
        self.timed_out = timed_out


class GroupError(ZkConsumerError):
    """The member cannot go on in its Kafka-coordinated group, and no retry can fix it: the
    coordinator refused the member (authorization, configuration, a protocol no other member
    speaks) or answered something that cannot be read. Transient trouble never raises it."""


class GroupMetadataError(GroupError):
    """The consumer protocol's bytes (a subscription or an assignment, written by another
    client: kafka-python, Java, librdkafka) do not parse; names the member they came from."""


class InconsistentGroupProtocolError(GroupError):
    """The group's members speak another protocol type, or share no assignor with this one."""


class ProtocolRefusedError(InconsistentGroupProtocolError):
    """The coordinator refused the member's JoinGroup for it (INCONSISTENT_GROUP_PROTOCOL),
    which names no protocol of the others: the member's driver asks the coordinator what they
    use and words it anew (`GroupMember.refusal`)."""


class GroupAuthorizationError(GroupError):
    """The broker's ACLs refuse this client the group (or a topic it commits)."""


class GroupConfigError(GroupError):
    """The coordinator refused a setting of the member (its session timeout, its group id)."""


class UnexpectedGroupEvent(GroupError):
    """The driver reported an event the member's state table does not list for its state: a bug
    of the driver (e.g. an assignment computed by a member that is not the group's leader)."""


class KafkaConnectionError(ZkConsumerError):
    """No broker could be reached, or a connection failed under a request: transient (the
    next attempt connects anew). `reached`: a broker was connected to but answered in a form
    that does not parse, which is no matter of reaching it."""

    retriable = True

    def __init__(self, message: str, reached: bool = False,
                 failures: list[str] | None = None) -> None:
        """`failures`: none of the brokers to start from could be asked, why for each."""
        super().__init__(message)
        self.reached = reached
        self.failures = failures

    @property
    def out_of_reach(self) -> bool:
        """None of the brokers to start from could be asked: Kafka cannot be asked at all."""
        return self.failures is not None

    def line(self, where: str) -> str:
        """The project's one line for Kafka that could not be asked at `where`: "cannot reach
        Kafka at ..." with why for each broker when none could be connected to; the error
        itself when a broker was reached but answered in a form no Kafka does."""
        if self.reached:
            return str(self)
        why = "; ".join(self.failures) if self.failures else describe_error(self)
        return f"cannot reach Kafka at {where}: {why}"


class OffsetsNotAnswered(KafkaConnectionError):
    """Offsets asked of the leaders until the timeout, some partitions still unanswered (no
    leader known, say): `found` holds the offsets of those that were, `missing` the others, so
    that a caller need not wait out the timeout again for what was answered."""

    def __init__(self, message: str, found: dict, missing: list) -> None:
        super().__init__(message)
        self.found = found
        self.missing = missing


class BrokerError(ZkConsumerError):
    """A broker answered a request with an error code. `retriable`: Kafka's judgement that a
    retry may cure it (a coordinator moving or loading, a leader changing)."""

    def __init__(self, message: str, code: int, retriable: bool) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = retriable
