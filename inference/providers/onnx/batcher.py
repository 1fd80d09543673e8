"""Micro-batching of concurrent requests: the engine asks about one image per call, from up to
`concurrency` threads at once; the calls waiting at the same moment go through the model as one batch.

The first thread to arrive while no batch is running becomes the runner: it waits up to `gather_s`
for the batch to fill (or less, once `max_batch` images wait), runs it, hands every caller its row,
and keeps running batches while more wait. The others only wait for their row. So a run of
concurrency C sends batches of up to min(C, max_batch) images, and a single caller pays at most
`gather_s` of latency.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Callable

import numpy as np


class Batcher:
    def __init__(self, run_batch: Callable[[np.ndarray], np.ndarray], max_batch: int, gather_s: float = 0.005, fixed: bool = False):
        self.run_batch = run_batch
        self.max_batch = max(1, max_batch)
        self.gather_s = gather_s
        self.fixed = fixed  # the model takes exactly max_batch rows: pad a short batch with zeros
        self.lock = threading.Lock()
        self.filled = threading.Condition(self.lock)
        self.waiting: list[tuple[np.ndarray, Future]] = []
        self.running = False
        self.sizes: list[int] = []  # batch sizes run so far (the bench and the tests read them)

    def infer(self, row: np.ndarray) -> tuple[np.ndarray, int]:
        """The model's output row for this input row, and the size of the batch it went in."""
        future: Future = Future()
        with self.lock:
            self.waiting.append((row, future))
            self.filled.notify_all()
            runner = not self.running
            if runner:
                self.running = True
        if runner:
            self._run_while_waiting()
        return future.result()

    def _run_while_waiting(self) -> None:
        while True:
            with self.lock:
                deadline = time.monotonic() + self.gather_s
                while len(self.waiting) < self.max_batch and time.monotonic() < deadline:
                    self.filled.wait(max(0.0, deadline - time.monotonic()))
                batch, self.waiting = self.waiting[:self.max_batch], self.waiting[self.max_batch:]
                if not batch:
                    self.running = False
                    return
            rows = np.stack([r for r, _ in batch])
            if self.fixed and len(batch) < self.max_batch:
                rows = np.concatenate([rows, np.zeros((self.max_batch - len(batch), *rows.shape[1:]), dtype=rows.dtype)])
            try:
                out = self.run_batch(rows)
            except BaseException as exc:  # every caller of this batch gets the error
                for _, future in batch:
                    future.set_exception(exc)
            else:
                self.sizes.append(len(batch))
                for k, (_, future) in enumerate(batch):
                    future.set_result((out[k], len(batch)))
