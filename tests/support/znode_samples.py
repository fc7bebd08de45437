"""Every znode decoder by name, with data each accepts: what the hostile-data tests and the
fuzzer start from."""

from __future__ import annotations

from zkconsumer.znodes.brokers import BrokerRegistration
from zkconsumer.znodes.consumers import ConsumerRegistration, decode_offset, decode_owner
from zkconsumer.znodes.topics import PartitionState, TopicPartitions

DECODERS = {
    "registration": ConsumerRegistration.decode,
    "owner": decode_owner,
    "offset": decode_offset,
    "broker": BrokerRegistration.decode,
    "topic": TopicPartitions.decode,
    "partition-state": PartitionState.decode,
}
VALID = {
    "registration": [
        b'{"version":1,"subscription":{"orders":2,"audit":1},"pattern":"static",'
        b'"timestamp":"1700000000000"}',
        b'{"version":1,"subscription":{"orders\\\\..*":1},"pattern":"white_list",'
        b'"timestamp":"1700000000000"}'],
    "owner": [b"g_host-1700000000000-0badf00d-0"],
    "offset": [b"42", b"-1"],
    "broker": [
        b'{"jmx_port":-1,"timestamp":"1700000000000","host":"b1","version":1,"port":9092}',
        b'{"jmx_port":-1,"timestamp":"1700000000000","endpoints":["PLAINTEXT://b1:9092"],'
        b'"host":"b1","version":2,"port":9092}',
        b'{"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT","EXTERNAL":"SASL_SSL"},'
        b'"endpoints":["INTERNAL://b1:9092","EXTERNAL://b1.example:9093"],"jmx_port":-1,'
        b'"host":null,"timestamp":"1700000000000","port":-1,"version":4,"rack":"r1"}'],
    "topic": [
        b'{"version":1,"partitions":{"0":[0,1],"1":[1,2],"2":[2,0]}}',
        b'{"version":3,"topic_id":"mUq4dT3xQd6J4tKjQXkHlg","partitions":{"0":[0,1]},'
        b'"adding_replicas":{"0":[1]},"removing_replicas":{}}'],
    "partition-state": [b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,'
                        b'"isr":[1,0]}'],
}
