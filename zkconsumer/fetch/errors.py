"""The one error every fetch backend raises when fetching cannot go on."""

from zkconsumer.errors import ZkConsumerError


class FetchError(ZkConsumerError):
    """The Kafka client could not be created, or fetching failed in a way no retry can fix."""
