"""kombu's Redis and filesystem transports, each with one change.

**Redis: a channel of a closed connection raises a connection error.**
Why: celery 5.7.0 with kombu 5.7.0 (the latest releases) made a worker EXIT when Redis went away and
came back. When the broker connection drops, the worker `collect()`s the connection (its transport
is detached: `transport.client = None`) and then closes it again; and a task that was running
meanwhile acks its message on its old channel when it ends. Both reach kombu's `_connparams` on
that channel, which reads `self.connection.client.hostname` and raised AttributeError ("'NoneType'
object has no attribute 'hostname'"). An AttributeError is not a connection error, so the worker
took it for an unrecoverable error and stopped consuming. Here the same situation raises
redis' ConnectionError, which kombu and celery handle as what it is: the close is skipped, the ack
is logged as failed ("Couldn't ack"), and the worker reconnects. (A message whose ack failed stays
in Redis' unacked set and comes back after the visibility timeout; a run's chunk delivered again
finds its images done, see inference/leases.py.) Tested by tests/core/test_broker_outage.py, which
kills a private Redis under a working worker.

**Filesystem (the embedded default): a message file appears whole.**
Why: kombu's filesystem transport creates a message's file under its final name and then writes it;
a consumer polling the folder in between takes the empty file, removes it and fails to decode it, so
the message is lost (kombu issue #1551, open). With a consumer polling without pause, 2 to 1,090 of
3,000 messages sent by another process were lost that way per round on a loaded 2-core machine
(bench/filesystem_broker.py); a worker's ping once went unanswered in CI. Here the message is written
under a name no consumer reads (".part" after the queue's ".msg") and renamed into place, atomic within
the folder. Tested by tests/core/test_filesystem_broker.py.

`install()` (called by cprt_site/celery.py) makes `redis://`, `rediss://` and `filesystem://` broker URLs
use these classes through kombu's transport table, so each URL keeps its meaning (TLS for rediss).
"""
from __future__ import annotations

import os
import uuid
from time import monotonic

import redis
from kombu.exceptions import ChannelError
from kombu.transport import filesystem as kombu_filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes

NAME = "cprt_site.broker_transport:Transport"
FILESYSTEM_NAME = "cprt_site.broker_transport:FilesystemTransport"


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection of this channel was closed (Redis went away)")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


class FilesystemChannel(kombu_filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put `payload` onto `queue`: kombu's file name (the time in ms first, so consumers take the messages in
        order), written whole under that name + ".part" and then renamed to it."""
        body = str_to_bytes(kombu_filesystem.dumps(payload))
        final = os.path.join(self.data_folder_out, f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg")
        partial = final + ".part"  # consumers read only names ending in ".<queue>.msg"
        try:
            with open(partial, "wb") as f:
                f.write(body)
            os.replace(partial, final)
        except OSError as exc:
            try:
                os.remove(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class FilesystemTransport(kombu_filesystem.Transport):
    Channel = FilesystemChannel


def install() -> None:
    """Use these transports for every redis://, rediss:// and filesystem:// broker URL of this process."""
    from kombu import transport

    for scheme in ("redis", "rediss"):
        transport.TRANSPORT_ALIASES[scheme] = NAME
    transport.TRANSPORT_ALIASES["filesystem"] = FILESYSTEM_NAME
