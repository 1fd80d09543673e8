"""Benchmark: messages lost on the filesystem broker, kombu's own transport beside the project's.

    .venv/bin/python bench/filesystem_broker.py [--messages 3000] [--rounds 3]

Per round and transport: one process puts --messages messages on a queue while another takes them,
polling without pause (the worst case of a worker polling the folder); printed: how many arrived, how
many could not be decoded (a file taken before it was written: the message is lost) and the seconds.
kombu's transport writes a message's file in place; cprt_site/broker_transport.py writes it under another
name and renames it (kombu issue #1551). The scratch folders and both processes end with the bench, also
on SIGTERM.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import scratch_folder  # noqa: E402 - SIGTERM ends the bench cleanly


def connection(folder: str, project: bool):
    from kombu import Connection

    if project:
        from cprt_site import broker_transport

        broker_transport.install()
    return Connection("filesystem://", transport_options={"data_folder_in": folder, "data_folder_out": folder, "polling_interval": 0.0})


def produce(folder: str, project: bool, n: int) -> None:
    with connection(folder, project) as conn:
        queue = conn.SimpleQueue("bench")
        for i in range(n):
            queue.put({"i": i})


def consume(folder: str, project: bool, n: int, out) -> None:
    with connection(folder, project) as conn:
        assert ("cprt_site" in type(conn.transport).__module__) == project
        queue = conn.SimpleQueue("bench")
        got, unreadable, deadline = set(), 0, time.monotonic() + 120
        while len(got) + unreadable < n and time.monotonic() < deadline:
            try:
                message = queue.get(block=True, timeout=0.5)
            except queue.Empty:
                continue
            except ValueError:  # the JSON decoding error of a file taken empty or half written
                unreadable += 1
                continue
            got.add(message.payload["i"])
            message.ack()
        out.put((len(got), unreadable))


def one_round(project: bool, n: int) -> tuple[int, int, float]:
    with scratch_folder("bench-fs-broker-") as folder:
        out = mp.Queue()
        children = [mp.Process(target=consume, args=(str(folder), project, n, out)), mp.Process(target=produce, args=(str(folder), project, n))]
        started = time.perf_counter()
        try:
            for child in children:
                child.start()
            arrived, unreadable = out.get(timeout=180)
            return arrived, unreadable, time.perf_counter() - started
        finally:  # done (the consumer has answered) or ended early (SIGTERM): the children go now
            for child in children:
                if child.is_alive():
                    child.terminate()
                child.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for r in range(args.rounds):
        for name, project in (("kombu's transport", False), ("the project's", True)):
            arrived, unreadable, seconds = one_round(project, args.messages)
            print(f"round {r + 1}, {name:<17}: {arrived:>6} of {args.messages} arrived, {unreadable:>4} lost unreadable, "
                  f"{args.messages - arrived - unreadable:>4} missing otherwise ({seconds:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
