"""The trace readers, the granularity transform and the synthetic generator."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pycert.analysis.stats import trace_stats
from pycert.core.errors import InputError
from pycert.core.files import file_sha256
from pycert.data import synthetic
from pycert.data.traces import (
    MOONCAKE_BLOCK_TOKENS,
    coarsen,
    read_trace,
    trace_from_bytes,
)

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "traces" / "mooncake-fast25"
CONVERSATION = SHARED / "conversation_trace.jsonl"
SYNTHETIC = SHARED / "synthetic_trace.jsonl"
needs_conversation = pytest.mark.skipif(not CONVERSATION.exists(), reason=f"Mooncake trace absent: {CONVERSATION}")


def line(ids: list[int], ts: int = 0) -> str:
    return json.dumps({"timestamp": ts, "input_length": 512 * len(ids), "output_length": 7, "hash_ids": ids}) + "\n"


def write(tmp_path: Path, text: str | bytes, name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def test_mooncake_reader_keeps_order_requests_and_hash(tmp_path: Path) -> None:
    p = write(tmp_path, line([0, 1, 2]) + line([0, 1, 3, 4], 5) + line([]) + line([7]) + "\n \r\n")
    t = read_trace(p)
    assert t.format == "mooncake"
    assert t.refs.tolist() == [0, 1, 2, 0, 1, 3, 4, 7]
    assert t.requests.tolist() == [0, 3, 7, 7, 8]
    assert t.n_requests == 4 and t.n_refs == 8
    assert t.sha256 == hashlib.sha256(p.read_bytes()).hexdigest() == file_sha256(p)
    assert t.block_tokens == MOONCAKE_BLOCK_TOKENS and t.path == p
    assert t.prompt_tokens.tolist() == [1536, 2048, 0, 512] and t.tenants is None
    assert read_trace(write(tmp_path, "5\n3\n", "ids.txt")).prompt_tokens is None


def test_ids_reader_and_autodetect(tmp_path: Path) -> None:
    p = write(tmp_path, "5\n3\n5\n 9 \n3", "ids.txt")  # no final newline is fine for ids
    t = read_trace(p)
    assert t.format == "ids" and t.requests is None and t.block_tokens is None
    assert t.refs.tolist() == [5, 3, 5, 9, 3]
    assert t.refs.dtype == np.uint64
    with pytest.raises(InputError, match="ids.txt:1"):
        read_trace(p, "mooncake")


@pytest.mark.parametrize("name, text", [
    ("ids.txt", "5\n3\n\n5\n"),
    ("ids.txt", "5\r\n3\r\n \r\n5\r\n"),
    ("t.jsonl", line([1]) + line([2]) + "\n" + line([3])),
])
def test_a_blank_line_in_the_middle_is_an_error_naming_it(tmp_path: Path, name: str, text: str) -> None:
    """README (Limits): blank lines only at the end; one in the middle stands where a reference was."""
    p = write(tmp_path, text, name)
    with pytest.raises(InputError, match=r"blank line in the middle of the trace \(line 4 follows it\)") as err:
        read_trace(p)
    assert str(err.value).startswith(f"{p}:3: ")


def test_blank_lines_at_the_end_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    p = write(tmp_path, b"\xef\xbb\xbf5\r\n3\r\n5\r\n\r\n  \n\n", "ids.txt")
    assert read_trace(p).refs.tolist() == [5, 3, 5]


def test_gzip_is_read_and_hashed_as_stored(tmp_path: Path) -> None:
    text = line([1, 2]) + line([2, 3])
    p = write(tmp_path, gzip.compress(text.encode()), "t.jsonl.gz")
    t = read_trace(p)
    assert t.refs.tolist() == [1, 2, 2, 3]
    assert t.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert t.sha256 != hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("content, where, reason", [
    (line([1]) + '{"timestamp": 0, "input_length": 5,\n' + line([2]), ":2", "malformed JSON"),
    (line([1]) + '{"timestamp": 0, "input_length": 5, "output_length": 1}\n', ":2", "missing field 'hash_ids'"),
    ('{"hash_ids": [1], "output_length": 1}\n', ":1", "a field of the mooncake layout, but not its 'input_length': "
     "name the layout, --format requests"),
    (line([1]).replace("[1]", "[1, 2.5]"), ":1", r"hash_ids\[1\] is not an integer: 2.5"),
    (line([1]).replace("[1]", '[1, "3"]'), ":1", r"hash_ids\[1\] is not an integer"),
    (line([1]).replace("[1]", "[true]"), ":1", r"hash_ids\[0\] is not an integer: true"),
    (line([1]) + line([4, -2]), ":2", r"hash_ids\[1\] is negative: -2"),
    (line([1]).replace("[1]", "[18446744073709551616]"), ":1", "does not fit in 64 bits"),
    (line([1]).replace('"hash_ids": [1]', '"hash_ids": 3'), ":1", "must be a list"),
    (line([1]).replace('"timestamp": 0', '"timestamp": -4'), ":1", "'timestamp' must be a non-negative number of milliseconds, got -4"),
    (line([1]) + "[1, 2]\n", ":2", "expected a JSON object"),
    (line([1]) + line([2])[:-9], ":2", "truncated last line"),
    ("", "", "empty trace: no lines"),
    ("\n\n", "", "empty trace: no lines"),
    (line([]) + line([]), "", "empty trace: no block references"),
])
def test_bad_mooncake_input(tmp_path: Path, content: str, where: str, reason: str) -> None:
    p = write(tmp_path, content)
    with pytest.raises(InputError, match=reason) as err:
        read_trace(p)
    assert str(err.value).startswith(f"{p}{where}: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("content, where, reason", [
    ("1\n2\n-3\n", ":3", "negative id: '-3'"),
    ("1\n2.0\n", ":2", "not a non-negative integer id: '2.0'"),
    ("1\nabc\n", ":2", "not a non-negative integer id"),
    ("1\n\u00b2\n", ":2", "not a non-negative integer id"),
    ("18446744073709551616\n", ":1", "does not fit in 64 bits"),
])
def test_bad_ids_input(tmp_path: Path, content: str, where: str, reason: str) -> None:
    p = write(tmp_path, content, "ids.txt")
    with pytest.raises(InputError, match=reason) as err:
        read_trace(p, "ids")
    assert str(err.value).startswith(f"{p}{where}: ")


def test_truncated_or_corrupt_gzip_is_refused(tmp_path: Path) -> None:
    data = gzip.compress((line([1, 2]) * 50).encode())
    p = write(tmp_path, data[: len(data) // 2], "t.jsonl.gz")
    with pytest.raises(InputError, match="gzip"):
        read_trace(p)
    q = write(tmp_path, data[:10] + b"\x00" * 40 + data[50:], "c.jsonl.gz")
    with pytest.raises(InputError, match="gzip|JSON|truncated"):
        read_trace(q)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_trace(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="directory"):
        read_trace(tmp_path)


def test_coarsen_merges_within_requests_and_renumbers_densely() -> None:
    data = (line([10, 11, 12, 13, 14]) + line([10, 11, 12, 13, 20]) + line([10, 11])).encode()
    t = trace_from_bytes(data, "mem")
    c = coarsen(t, 2)
    # chunks: (10,11) (12,13) (14) | (10,11) (12,13) (20) | (10,11)
    assert c.refs.tolist() == [0, 1, 2, 0, 1, 3, 0]
    assert c.requests.tolist() == [0, 3, 6, 7]
    assert c.granularity == 2 and c.block_tokens == 2 * MOONCAKE_BLOCK_TOKENS
    assert c.sha256 == t.sha256
    c4 = coarsen(coarsen(t, 2), 2)
    assert c4.granularity == 4
    assert coarsen(t, 4).refs.tolist() == [0, 1, 0, 2, 3]  # (10..13) (14) | (10..13) (20) | (10,11)
    assert coarsen(t, 1) is t
    with pytest.raises(ValueError):
        coarsen(t, 0)


def test_coarsen_ids_trace_is_one_request() -> None:
    t = trace_from_bytes(b"1\n2\n3\n1\n2\n3\n1\n", "mem")
    c = coarsen(t, 3)
    assert c.refs.tolist() == [0, 0, 1] and c.requests is None and c.block_tokens is None


def test_coarsen_matches_a_direct_tuple_count() -> None:
    t = synthetic.default_trace(seed=5)
    for k in (2, 3, 4):
        c = coarsen(t, k)
        chunks = [tuple(t.refs[s:e][i:i + k]) for s, e in zip(t.requests[:-1], t.requests[1:])
                  for i in range(0, e - s, k)]
        assert c.n_refs == len(chunks)
        assert len(set(c.refs.tolist())) == len(set(chunks))
        first_seen = {ch: j for j, ch in reversed(list(enumerate(chunks)))}
        assert all(c.refs[j] == c.refs[first_seen[ch]] for j, ch in enumerate(chunks))


def test_synthetic_is_seeded_and_well_formed(tmp_path: Path) -> None:
    a, b = synthetic.generate(3, 120), synthetic.generate(3, 120)
    assert a == b and a != synthetic.generate(4, 120)
    assert len(a) == 120
    assert all(math.ceil(r["input_length"] / MOONCAKE_BLOCK_TOKENS) == len(r["hash_ids"]) for r in a)
    assert [r["timestamp"] for r in a] == sorted(r["timestamp"] for r in a)
    p = synthetic.write_trace(tmp_path / "s.jsonl", seed=3, requests=120)
    t = read_trace(p)
    assert sum(len(r["hash_ids"]) for r in a) == t.n_refs
    assert t.sha256 == hashlib.sha256(synthetic.to_jsonl(a)).hexdigest()


def test_default_synthetic_trace_is_small_with_reuse() -> None:
    t = synthetic.default_trace()
    st = trace_stats(t)
    assert 2_000 <= st.refs <= 10_000
    assert 0.3 < st.ceiling.decimal < 0.95  # shared prefixes and sessions: reuse, but not all reuse
    # ids are handed out in order of first use, as in the released traces
    seen: set[int] = set()
    for x in t.refs.tolist():
        if x not in seen:
            assert x == len(seen)
            seen.add(x)


@needs_conversation
def test_conversation_trace_reference_figures() -> None:
    t = read_trace(CONVERSATION)
    st = trace_stats(t)
    assert (st.refs, st.distinct, t.n_requests) == (288_500, 182_790, 12_031)
    assert round(st.ceiling.decimal, 6) == 0.366412
    assert st.ceiling.value == 1 - st.cold_miss_floor.value
    assert t.sha256 == "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"


@pytest.mark.skipif(not SYNTHETIC.exists(), reason=f"Mooncake trace absent: {SYNTHETIC}")
def test_mooncake_synthetic_trace_reads() -> None:
    t = read_trace(SYNTHETIC)
    assert t.n_requests == 3_993 and t.n_refs == int(t.requests[-1])
    assert t.sha256 == "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131"
