"""kombu's Redis transport with one change: a channel of a closed connection raises a connection error.

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
finds its images done, see inference/leases.py.)

`install()` (called by cprt_site/celery.py) makes `redis://` and `rediss://` broker URLs use this
class through kombu's transport table, so the URL keeps its meaning (TLS for rediss). Tested by
tests/core/test_broker_outage.py, which kills a private Redis under a working worker.
"""
from __future__ import annotations

import redis
from kombu.transport import redis as kombu_redis

NAME = "cprt_site.broker_transport:Transport"


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection of this channel was closed (Redis went away)")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


def install() -> None:
    """Use this transport for every redis:// and rediss:// broker URL of this process."""
    from kombu import transport

    for scheme in ("redis", "rediss"):
        transport.TRANSPORT_ALIASES[scheme] = NAME
