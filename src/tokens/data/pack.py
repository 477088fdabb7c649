"""Packs a tiktoken ranks file (`<base64 token> <rank>` per line) into the table the core embeds.

    python3 src/tokens/data/pack.py o200k_base.tiktoken src/tokens/data/o200k_base.tokens

The output holds every token in rank order (rank 0 first), each as one byte giving its length
(1..=255) followed by its bytes. The ranks must run 0, 1, 2, ... with no gap (true of OpenAI's
files); the Rust test `tokens::bpe::tests::tables_equal_tiktoken_rs` checks the packed tables
against tiktoken-rs's copy of the same files.
"""

import base64
import sys


def main(source: str, target: str) -> None:
    out = bytearray()
    with open(source, encoding="ascii") as f:
        for expected, line in enumerate(f):
            token, rank = line.split()
            if int(rank) != expected:
                sys.exit(f"{source}: rank {rank} on line {expected + 1}, expected {expected}")
            raw = base64.b64decode(token, validate=True)
            if not 1 <= len(raw) <= 255:
                sys.exit(f"{source}: token of rank {rank} is {len(raw)} bytes long")
            out.append(len(raw))
            out += raw
    with open(target, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
