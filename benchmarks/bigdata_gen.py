#!/usr/bin/env python3
"""Writes a JSON document of about SIZE bytes shaped like a Firebase export, from a fixed seed,
for the big-data figures (benchmarks/bigdata.sh): users and posts under push-ID-like keys, each
a small object with strings, numbers, booleans, a short array and a nested object, plus a few
priorities. The same SIZE and seed always give the same bytes.

usage: bigdata_gen.py SIZE_BYTES OUT_FILE [--seed N]
"""
import random
import sys

ALPHABET = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
         "héllo", "日本語", "naïve", "quote\"d", "back\\slash", "tab\tbed"]


def esc(s):
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def push_id(rng, n):
    # Time-ordered like push IDs: a counter prefix keeps keys in key order.
    head = ""
    x = n
    for _ in range(8):
        head = ALPHABET[x % 64] + head
        x //= 64
    return head + "".join(rng.choice(ALPHABET) for _ in range(12))


def user(rng, i):
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
    tags = ",".join(esc(rng.choice(WORDS)) for _ in range(rng.randint(0, 4)))
    body = ('{"name":%s,"email":%s,"age":%d,"score":%s,"active":%s,"tags":[%s],'
            '"profile":{"bio":%s,"city":%s,"visits":%d}'
            % (esc("user %d %s" % (i, rng.choice(WORDS))), esc("u%d@example.com" % i), rng.randint(13, 99),
               repr(round(rng.uniform(0, 1000), 3)), "true" if rng.random() < 0.5 else "false", tags,
               esc(words), esc(rng.choice(WORDS)), rng.randint(0, 100000)))
    if rng.random() < 0.05:
        body += ',".priority":%d' % rng.randint(0, 100)
    return body + "}"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    size = int(sys.argv[1])
    out = sys.argv[2]
    seed = 20261125
    if "--seed" in sys.argv:
        seed = int(sys.argv[sys.argv.index("--seed") + 1])
    rng = random.Random(seed)
    written = 0
    with open(out, "w", encoding="utf-8") as f:
        def put(s):
            nonlocal written
            f.write(s)
            written += len(s.encode("utf-8"))
        put('{"meta":{"version":3,"seed":%d},"users":{' % seed)
        i = 0
        half = size // 2
        while written < half:
            put(("," if i else "") + esc(push_id(rng, i)) + ":" + user(rng, i))
            i += 1
        put('},"posts":{')
        j = 0
        while written < size - 64:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30)))
            put(("," if j else "") + esc(push_id(rng, j)) + ':{"by":%s,"text":%s,"likes":%d,"at":%d}'
                % (esc("u%d" % rng.randrange(max(i, 1))), esc(text), rng.randint(0, 500), 1700000000000 + j))
            j += 1
        put("}}\n")


if __name__ == "__main__":
    main()
