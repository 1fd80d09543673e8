"""The filesystem broker (the embedded default) never hands out a message that is still being written.

kombu's own filesystem transport created a message's file under its final name and then wrote it: a consumer
polling meanwhile took the empty file, removed it and failed to decode it, and the message was lost (kombu issue
#1551). cprt_site/broker_transport.py writes it under another name and renames it into place. On kombu's transport
the first test fails: the read in the middle raises a JSON decoding error, and the message is gone."""
from __future__ import annotations

import threading
from queue import Empty

import pytest
from kombu import Connection
from kombu.transport import filesystem as kombu_filesystem

from cprt_site import broker_transport


@pytest.fixture
def channel(tmp_path):
    broker_transport.install()
    with Connection("filesystem://", transport_options={"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path)}) as conn:
        yield conn.default_channel


def test_a_message_being_written_is_not_read_and_arrives_whole(channel, monkeypatch):
    assert isinstance(channel, broker_transport.FilesystemChannel)  # what filesystem:// URLs get in this project
    writing, go_on = threading.Event(), threading.Event()
    real = kombu_filesystem.dumps

    def slow(payload):  # the producer is slow to write its message (a busy machine)
        writing.set()
        go_on.wait(10)
        return real(payload)

    monkeypatch.setattr(kombu_filesystem, "dumps", slow)
    producer = threading.Thread(target=channel._put, args=("api", {"task": "cprt_site.ping", "args": ["stored"]}))
    producer.start()
    try:
        assert writing.wait(10)
        with pytest.raises(Empty):  # a consumer polling now finds nothing to take
            channel._get("api")
    finally:
        go_on.set()
        producer.join(10)
    assert channel._get("api") == {"task": "cprt_site.ping", "args": ["stored"]}
    with pytest.raises(Empty):
        channel._get("api")


def test_each_message_reaches_its_own_queue_once(channel):
    for i in range(5):
        channel._put("api", {"i": i})
        channel._put("gpu", {"i": 100 + i})
    assert channel._size("api") == 5 and channel._size("gpu") == 5
    # (in order of their millisecond, as kombu's names order them; within one millisecond in any order)
    assert sorted(channel._get("api")["i"] for _ in range(5)) == list(range(5))
    assert sorted(channel._get("gpu")["i"] for _ in range(5)) == [100 + i for i in range(5)]
    for queue in ("api", "gpu"):
        with pytest.raises(Empty):
            channel._get(queue)
