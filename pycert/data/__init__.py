"""Data in: block-reference traces (Mooncake JSONL, one id per line) and the seeded synthetic generator."""
