"""Example asyncio service: a group member whose handler awaits (here, a pretend HTTP call per
message) while the same event loop serves other work. Ctrl-C (or the task being cancelled) commits
what was handled and leaves the group; the message being handled then is delivered again later.

    .venv/bin/python scripts/asyncio_example.py --zookeeper zk1:2181 --group audit --topic orders
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from zkconsumer import AsyncConsumerConnector


async def handle(message) -> None:
    await asyncio.sleep(0.001)  # stands for an awaited call: a database, an HTTP API
    print(f"{message.topic}-{message.partition}@{message.offset}: {message.value!r}")


async def consume(config: dict[str, str], topic: str, streams: int) -> None:
    async with AsyncConsumerConnector(config) as connector:
        topic_streams = (await connector.create_message_streams({topic: streams}))[topic]

        async def drain(stream) -> None:
            async for message in stream:
                await handle(message)

        await asyncio.gather(*(drain(stream) for stream in topic_streams))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zookeeper", required=True, help="zookeeper.connect")
    parser.add_argument("--group", required=True, help="group.id")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--streams", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)  # zkconsumer's lines, through the application's set-up
    config = {"zookeeper.connect": args.zookeeper, "group.id": args.group,
              "auto.offset.reset": "smallest"}
    try:
        asyncio.run(consume(config, args.topic, args.streams))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
