"""The machine a benchmark ran on, as bench.py and peers_bench.py describe it."""

import os
import platform


def describe():
    """CPU model, memory, operating system and kernel, from /proc and /etc/os-release ("?"
    for what cannot be read)."""
    cpu = mem = osname = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    if os.path.exists("/etc/os-release"):
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    osname = line.split("=", 1)[1].strip().strip('"')
    return {"cpu": cpu, "mem": mem, "os": osname, "kernel": platform.release()}
