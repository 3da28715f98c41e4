#!/usr/bin/env python3
"""What a small write and its fdatasync cost on this machine's filesystem, appending to a new
file against writing over a file whose blocks are already written: 400 writes of 3,000 bytes,
each synced, wall time and this process's CPU per sync, twice each.
Usage (from the checkout's root, so the file lands on the drives' filesystem):
    cd target && python3 ../docs/bench/2026-11-29-small-ops/sync-cost.py"""
import os, time, resource
def run(mode, n=400, size=3000):
    p = 'synctest.bin'
    if os.path.exists(p): os.remove(p)
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    if mode == 'overwrite':
        os.write(fd, b'\0' * (n * size + 8192)); os.fsync(fd)
    buf = os.urandom(size)
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.time()
    for i in range(n):
        os.pwrite(fd, buf, i * size)
        os.fdatasync(fd)
    t1 = time.time(); r1 = resource.getrusage(resource.RUSAGE_SELF)
    os.close(fd); os.remove(p)
    print(f"{mode:10s} {1e3*(t1-t0)/n:.2f} ms/sync wall, {1e6*((r1.ru_stime-r0.ru_stime)+(r1.ru_utime-r0.ru_utime))/n:.0f} µs CPU/sync")
for _ in range(2):
    run('append'); run('overwrite')
