"""Latency of POST /v1/ask under concurrent clients, on the bundled samples, over loopback.

    python benchmarks/bench_server.py [--clients 8] [--requests 96] [--seconds 120]

Indexes samples/ into a temporary folder, starts the real server (uvicorn, in this process) on
127.0.0.1, and has --clients threads ask the questions of tests/data/questions.jsonl in turn until
--requests answers came back or --seconds passed (bounded in count and time; loopback only).
Prints p50/p95/max latency and throughput.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import citeline  # noqa: E402
from citeline.access import create_key  # noqa: E402
from serve.live import serving  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=96)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in (ROOT / "tests/data/questions.jsonl").open()]
    with tempfile.TemporaryDirectory() as tmp:
        kb = citeline.open(Path(tmp) / "index", server_rate_limit=0)
        kb.add([ROOT / "samples"], root=ROOT)
        key, _ = create_key(kb.store, "bench", (), "reader")
        latencies: list[float] = []
        refused = 0
        lock = threading.Lock()
        deadline = time.monotonic() + args.seconds
        counter = iter(range(args.requests))
        with serving(kb, mcp=False) as url:
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as warm:
                warm.post("/v1/ask", json={"question": questions[0]}).raise_for_status()

            def client() -> None:
                nonlocal refused
                with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
                    while time.monotonic() < deadline:
                        with lock:
                            i = next(counter, None)
                        if i is None:
                            return
                        t0 = time.perf_counter()
                        r = c.post("/v1/ask", json={"question": questions[i % len(questions)]})
                        elapsed = time.perf_counter() - t0
                        r.raise_for_status()
                        with lock:
                            latencies.append(elapsed)
                            refused += bool(r.json()["refused"])

            started = time.perf_counter()
            threads = [threading.Thread(target=client) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started
        kb.close()
    ms = sorted(x * 1000 for x in latencies)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(
        f"/v1/ask, {args.clients} concurrent clients, {len(ms)} answers ({refused} refusals) in {wall:.1f} s: "
        f"p50 {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, max {ms[-1]:.0f} ms, {len(ms) / wall:.1f} answers/s"
    )


if __name__ == "__main__":
    main()
