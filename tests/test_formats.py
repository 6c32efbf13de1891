"""The layouts of pycert.data.formats, each on a small file written for it (tests/traces/), and the
things every layout shares: stdin, gzip and zstd, the block size read from the lengths, tenants."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from pycert.core.errors import InputError
from pycert.data.formats import source
from pycert.data.traces import read_trace, trace_from_bytes

TRACES = Path(__file__).resolve().parent / "traces"
SAMPLES = {"requests": "requests-sample.jsonl", "mooncake": "mooncake-sample.jsonl", "bailian": "bailian-sample.jsonl", "aiperf": "aiperf-sample.jsonl",
           "prompts": "prompts-sample.jsonl", "ids": "ids-sample.txt"}


def write(tmp_path: Path, text: str | bytes, name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def jsonl(*rows: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def bailian(chat: int, length: int, ids: list[int], **extra: object) -> dict:
    return {"chat_id": chat, "parent_chat_id": -1, "timestamp": 5.999, "input_length": length, "output_length": 3,
            "type": "text", "turn": 1, "hash_ids": ids, **extra}


@pytest.mark.parametrize("layout", list(SAMPLES))
def test_each_sample_is_detected_and_reads_the_same_when_named(layout: str) -> None:
    path = TRACES / SAMPLES[layout]
    auto, named = read_trace(path), read_trace(path, layout)
    # a line of prompt token ids alone is the requests layout's, which reads it as the prompts layout does
    assert named.format == layout and auto.format == ("requests" if layout == "prompts" else layout)
    assert auto.refs.tolist() == named.refs.tolist() and auto.sha256 == named.sha256 == hashlib.sha256(
        path.read_bytes()).hexdigest()


def test_bailian_sample_float_seconds_and_16_token_blocks() -> None:
    t = read_trace(TRACES / SAMPLES["bailian"])
    assert (t.n_requests, t.n_refs, t.block_tokens) == (8, 51, 16)
    assert t.refs[:11].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 5, 6, 7]
    assert t.prompt_tokens.tolist() == [75, 96, 140, 17, 121, 50, 190, 80]
    assert "admit 16 tokens a block" in t.block_rule  # the lengths pin 16 exactly (line 4 and line 2)
    assert t.tenants is None


def test_mooncake_timestamp_is_optional_integer_or_float() -> None:
    t = read_trace(TRACES / SAMPLES["mooncake"])
    assert (t.n_requests, t.n_refs, t.block_tokens) == (5, 15, 512)


def test_aiperf_delay_session_and_missing_output_length() -> None:
    t = read_trace(TRACES / SAMPLES["aiperf"])
    assert (t.n_requests, t.n_refs, t.block_tokens) == (5, 16, 512)
    assert t.prompt_tokens.tolist() == [1200, 1800, 1300, 2100, 500]


def test_prompts_sample_has_tenants_and_full_blocks_only() -> None:
    t = read_trace(TRACES / SAMPLES["prompts"])
    assert t.tenant_names == ("acme", "globex") and t.tenants.tolist() == [0, 1] * 4
    assert t.block_tokens == 16
    counts = [length // 16 for length in t.prompt_tokens.tolist()]
    assert t.requests.tolist()[1:] == [sum(counts[:i + 1]) for i in range(len(counts))]


def test_prompt_blocks_are_chained_prefixes() -> None:
    """Block k of two prompts is one block iff the prompts agree on every token up to its end: the same
    two tokens after different prefixes are two blocks (vLLM's chained hash)."""
    rows = [{"prompt_token_ids": [1, 2, 3, 4, 5]}, {"prompt_token_ids": [1, 2, 3, 9, 5, 6]},
            {"prompt_token_ids": [9, 9, 1, 2]}, {"prompt_token_ids": [1]}]
    t = trace_from_bytes(jsonl(*rows).encode(), "p", block_tokens=2)
    assert t.refs.tolist() == [0, 1, 0, 2, 3, 4, 5]  # (1,2) (3,4) | (1,2) (3,9) (5,6) | (9,9) (1,2)-after-(9,9)
    assert t.requests.tolist() == [0, 2, 5, 7, 7] and t.prompt_tokens.tolist() == [5, 6, 4, 1]
    assert trace_from_bytes(jsonl(*rows).encode(), "p", block_tokens=4).refs.tolist() == [0, 1, 2]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=14), min_size=1, max_size=12), st.integers(1, 4))
def test_prompt_block_identity_is_prefix_equality(prompts: list[list[int]], b: int) -> None:
    """Against the definition: the block ending at token e of a prompt is named by the prompt's first
    e tokens; ids are dense in order of first appearance."""
    if not any(len(p) >= b for p in prompts):
        return
    t = trace_from_bytes(jsonl(*({"prompt_token_ids": p} for p in prompts)).encode(), "p", "prompts", b)
    names: dict[tuple[int, ...], int] = {}
    expected = [names.setdefault(tuple(p[:e]), len(names)) for p in prompts for e in range(b, len(p) + 1, b)]
    assert t.refs.tolist() == expected


def test_block_tokens_read_from_the_lengths_and_a_contradiction_names_both(tmp_path: Path) -> None:
    conv = TRACES / SAMPLES["mooncake"]
    assert read_trace(conv, block_tokens=512).block_tokens == 512
    assert read_trace(conv, block_tokens=540).block_tokens == 540  # the lengths admit 512 to 549
    with pytest.raises(InputError, match=r"64 tokens a block contradicts the trace \(the trace says 512\): line 4 "
                                         r"has 2,560 tokens in 5 blocks, at least 512 tokens a block") as err:
        read_trace(conv, block_tokens=64)
    assert err.value.where == "--block-tokens"
    with pytest.raises(InputError, match="line 1 has 1,100 tokens in 3 blocks, at most 549"):
        read_trace(conv, block_tokens=600)
    # lengths that say another size: a Mooncake-layout line of 64-token blocks pins 64
    p = write(tmp_path, jsonl({"input_length": 65, "output_length": 1, "hash_ids": [1, 2]},
                              {"input_length": 128, "output_length": 1, "hash_ids": [1, 3]}))
    assert read_trace(p).block_tokens == 64
    # lengths that fit no size: unknown, and any --block-tokens contradicts them
    q = write(tmp_path, jsonl({"input_length": 100, "output_length": 1, "hash_ids": []},
                              {"input_length": 5, "output_length": 1, "hash_ids": [4]}), "q.jsonl")
    t = read_trace(q)
    assert t.block_tokens is None and "line 1 has 0 blocks for 100 tokens" in t.block_rule
    with pytest.raises(InputError, match="its lengths fit no one block size"):
        read_trace(q, block_tokens=16)
    # lines that each fit some size but no size together: both lines named, not an empty range
    r = write(tmp_path, jsonl({"input_length": 40, "output_length": 1, "hash_ids": [1, 2]},
                              {"input_length": 33, "output_length": 1, "hash_ids": [3, 4, 5]}), "r.jsonl")
    t = read_trace(r)
    assert t.block_tokens is None
    assert "line 1 needs at least 20 tokens a block, line 2 at most 16" in t.block_rule
    # ids: no lengths, the flag is the block size; prompts: the flag is how they are blocked
    assert read_trace(TRACES / SAMPLES["ids"], block_tokens=256).block_tokens == 256
    assert read_trace(TRACES / SAMPLES["prompts"], block_tokens=8).n_refs > read_trace(TRACES / SAMPLES["prompts"]).n_refs


def test_tenants_are_kept_per_request_in_every_json_layout(tmp_path: Path) -> None:
    p = write(tmp_path, jsonl(bailian(0, 20, [1, 2], tenant="a"), bailian(1, 20, [1, 3], tenant="b"),
                              bailian(2, 10, [1], tenant="a")))
    t = read_trace(p)
    assert t.format == "bailian" and t.tenant_names == ("a", "b") and t.tenants.tolist() == [0, 1, 0]
    mixed = write(tmp_path, jsonl(bailian(0, 20, [1, 2], tenant="a"), bailian(1, 20, [1, 3])), "m.jsonl")
    with pytest.raises(InputError, match="no field 'tenant', but line 1 names a tenant") as err:
        read_trace(mixed)
    assert str(err.value).startswith(f"{mixed}:2: ")
    bad = write(tmp_path, jsonl({"prompt_token_ids": [1] * 16, "tenant": 7}), "b.jsonl")
    with pytest.raises(InputError, match="field 'tenant' must be a string, got 7"):
        read_trace(bad)


@pytest.mark.parametrize("rows, fmt, where, reason", [
    ([bailian(0, 20, [1, 2]), {**bailian(1, 20, [1, 2]), "timestamp": "5.9"}], "auto", ":2",
     "field 'timestamp' must be a non-negative number of seconds, got \"5.9\""),
    ([{k: v for k, v in bailian(0, 20, [1, 2]).items() if k != "turn"}], "auto", ":1",
     "missing field 'turn' \\(the bailian layout\\)"),
    ([bailian(0, 20, [1, 2], turn=0)], "auto", ":1", "field 'turn' must be a positive integer, got 0"),
    ([bailian(0, 20, [1, 2], parent_chat_id=-2)], "auto", ":1", "field 'parent_chat_id' must be an integer, -1 for"),
    ([bailian(0, 20, [1, 2], type=3)], "auto", ":1", "field 'type' must be a string, got 3"),
    ([{"session_id": "s", "input_length": 5, "hash_ids": [1]}, {"session_id": "s", "text_input": "hi"}], "auto",
     ":2", "a request given as 'text_input' has no block ids"),
    ([{"session_id": "s", "input_length": 5, "hash_ids": [1], "delay": -1}], "auto", ":1",
     "field 'delay' must be a non-negative number of milliseconds, got -1"),
    ([{"session_id": 4, "input_length": 5, "hash_ids": [1]}], "aiperf", ":1", "field 'session_id' must be a string"),
    ([{"prompt_token_ids": [1, 2, -3]}], "auto", ":1", r"prompt_token_ids\[2\] must be a token id"),
    ([{"prompt_token_ids": "1 2 3"}], "auto", ":1", "field 'prompt_token_ids' must be a list of token ids"),
    ([{"prompt_token_ids": [1] * 16, "timestamp": None}], "auto", ":1", "field 'timestamp' must be a non-negative"),
    ([{"prompt_token_ids": [1, 2]}], "auto", "", r"no block references \(no prompt has a full block of 16 tokens\)"),
    ([{"input_length": 5, "output_length": 1, "hash_ids": [1]}], "bailian", ":1", "missing field 'chat_id'"),
    ([{"input_length": 5, "output_length": 1, "hash_ids": [1]}], "prompts", ":1", "missing field 'prompt_token_ids'"),
])
def test_a_malformed_line_is_one_error_naming_file_line_field_and_what_was_expected(
        tmp_path: Path, rows: list[dict], fmt: str, where: str, reason: str) -> None:
    p = write(tmp_path, jsonl(*rows))
    with pytest.raises(InputError, match=reason) as err:
        read_trace(p, fmt)
    assert str(err.value).startswith(f"{p}{where}: ") and "\n" not in str(err.value)


def test_stdin_is_read_and_hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (TRACES / SAMPLES["bailian"]).read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(data))))
    t = read_trace("-")
    assert t.name == "<stdin>" and t.path is None and t.format == "bailian" and t.n_refs == 51
    assert t.sha256 == hashlib.sha256(gzip.compress(data)).hexdigest()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"1\n2\nx\n")))
    with pytest.raises(InputError, match="^<stdin>:3: not a non-negative integer id"):
        read_trace("-")


def test_zstd_by_magic_bytes_every_frame_hashed_as_stored(tmp_path: Path) -> None:
    text = (TRACES / SAMPLES["aiperf"]).read_bytes()
    packed = zstandard.ZstdCompressor().compress(text[:200]) + zstandard.ZstdCompressor().compress(text[200:])
    p = write(tmp_path, packed, "t.bin")  # no .zst: the magic bytes decide
    t = read_trace(p)
    assert t.refs.tolist() == read_trace(TRACES / SAMPLES["aiperf"]).refs.tolist()
    assert t.sha256 == hashlib.sha256(packed).hexdigest()


@pytest.mark.parametrize("cut", ["half", "last byte", "corrupt"])
def test_truncated_or_corrupt_zstd_is_refused(tmp_path: Path, cut: str) -> None:
    data = zstandard.ZstdCompressor().compress(b"1\n2\n3\n" * 50_000)
    bad = {"half": data[: len(data) // 2], "last byte": data[:-1], "corrupt": data[:8] + b"\0" * 20 + data[28:]}[cut]
    with pytest.raises(InputError, match="corrupt or truncated zstd data"):
        read_trace(write(tmp_path, bad, "t.zst"))


@pytest.mark.parametrize("cut", ["half", "last byte", "corrupt", "garbage after"])
def test_truncated_or_corrupt_gzip_is_refused(tmp_path: Path, cut: str) -> None:
    data = gzip.compress(b"1\n2\n3\n" * 50_000)
    bad = {"half": data[: len(data) // 2], "last byte": data[:-1], "corrupt": data[:12] + b"\xff" * 20 + data[32:],
           "garbage after": data + b"not gzip"}[cut]
    with pytest.raises(InputError, match="corrupt or truncated gzip data"):
        read_trace(write(tmp_path, bad, "t.gz"))


@pytest.mark.parametrize("kind", ["zstd-empty-frames", "gzip-empty-members"])
def test_frames_that_outrun_their_output_are_padding(tmp_path: Path, kind: str) -> None:
    """Frames beyond :data:`~pycert.data.formats.source.FREE_FRAMES` and one per ``FRAME_BYTES`` bytes they produce
    are refused, not decompressed one at a time (tests/attacks/compressed-padding times them)."""
    from tests.attacks.corpus import padding

    head = zstandard.ZstdCompressor().compress(b"1\n2\n") if kind.startswith("zstd") else gzip.compress(b"1\n2\n")
    with pytest.raises(InputError, match="padding, not a trace"):
        read_trace(write(tmp_path, head + padding(kind, 100_000), "t.bin"))
    few = padding(kind, 400)  # a few empty frames are not refused
    assert read_trace(write(tmp_path, head + few + head, "ok.bin")).refs.tolist() == [1, 2, 1, 2]


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_many_frames_each_with_data_read_like_one(tmp_path: Path, codec: str) -> None:
    """bgzip-like members, and a frame per line: as many frames as data allows, read whole."""
    lines = [b"%d\n" % (i % 977) for i in range(40_000)]
    text = b"".join(lines)
    pack = (lambda b: gzip.compress(b, mtime=0)) if codec == "gzip" else zstandard.ZstdCompressor().compress
    for chunk in (1 << 16, source.FRAME_BYTES):
        packed = b"".join(pack(text[i:i + chunk]) for i in range(0, len(text), chunk))
        assert read_trace(write(tmp_path, packed + (bytes(100) if codec == "gzip" else b""), "t.bin")).n_refs == 40_000


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_decompression_stops_at_the_cap(codec: str) -> None:
    """Every codec inflates through the gate's cap: a multiple of the stored size (4 MB of one id packs
    into a few KB)."""
    data = b"1\n" * 2_000_000
    packed = gzip.compress(data) if codec == "gzip" else zstandard.ZstdCompressor().compress(data)
    stream = source.decompressed(io.BufferedReader(io.BytesIO(packed)), "bomb", len(packed))
    with pytest.raises(InputError, match="^bomb: decompresses to more than .* refused as a compression bomb"):
        stream.read()


def test_the_docs_table_has_every_layout_with_an_example_line_it_reads() -> None:
    rows = [line for line in (Path(__file__).resolve().parent.parent / "docs" / "formats.md").read_text().splitlines()
            if line.startswith("| `")]
    found = {}
    for row in rows:
        layout = row.split("`")[1]
        example = row.rstrip(" |").rsplit("| `", 1)[1].rstrip("`")
        t = trace_from_bytes((example + "\n").encode(), "docs", layout)
        assert t.n_refs >= 1, row
        # auto picks each layout on its example, but prompts, whose lines are the requests layout's too
        assert trace_from_bytes((example + "\n").encode(), "docs").format == (
            "requests" if layout == "prompts" else layout), row
        found[layout] = t
    assert set(found) == set(SAMPLES) and list(found)[0] == "requests"


def test_requests_sample_keeps_tenant_session_and_host_per_request() -> None:
    t = read_trace(TRACES / SAMPLES["requests"])
    assert (t.format, t.n_requests, t.n_refs, t.block_tokens, t.prompt_tokens) == ("requests", 8, 50, None, None)
    assert t.tenant_names == ("acme", "globex", "initech") and t.tenants.tolist() == [0, 1, 0, 0, 1, 2, 0, 0]
    assert t.session_names == ("c-1", "c-2", "c-3", "c-4") and t.sessions.tolist() == [0, 1, 0, 2, 1, 3, 0, 2]
    assert t.host_names == ("gpu-0", "gpu-1") and t.lines.tolist() == list(range(1, 9))
    assert t.timestamps.tolist() == [0.75 * k for k in range(1, 9)] and t.disorder is None


JSON_IDS = st.one_of(st.integers(-(1 << 70), 1 << 70), st.integers(0, 40), st.integers(-3, 3),
                     st.sampled_from(["0x1f", "1f", "1F", "01f", "31", "0X1F", "aa", "AA", "0x", "", "ff" * 9,
                                      "9f86d081884c7d65", "09f86d081884c7d65", "é", "0x0", "0"]),
                     st.text(max_size=20))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(JSON_IDS, max_size=8), min_size=1, max_size=8).filter(lambda r: any(r)))
def test_requests_ids_are_one_block_iff_they_are_one_json_value(rows: list[list]) -> None:
    """Against the definition: JSON equality, a string never equal to a number (31 and "31" are two blocks)."""
    t = trace_from_bytes(jsonl(*({"hash_ids": r} for r in rows)).encode(), "r")
    ids = [(type(v), v) for r in rows for v in r]
    refs = t.refs.tolist()
    assert t.format == "requests" and len(refs) == len(ids)
    for i in range(len(ids)):
        for j in range(i):
            assert (refs[i] == refs[j]) == (ids[i] == ids[j]), (ids[i], ids[j])


def test_requests_ids_of_one_kind_are_kept_and_of_several_renumbered() -> None:
    plain = trace_from_bytes(jsonl({"hash_ids": [7, 1 << 63, 7]}).encode(), "r")
    assert plain.refs.tolist() == [7, 1 << 63, 7]  # an unsigned 64-bit trace reads as Mooncake's does
    hexes = trace_from_bytes(jsonl({"hash_ids": ["ffffffffffffffff", "0000000000000001"]}).encode(), "r")
    assert hexes.refs.tolist() == [(1 << 64) - 1, 1]  # one kind: the values themselves
    mixed = trace_from_bytes(jsonl({"hash_ids": [31, "1f", "0x1f", -1, 31]}).encode(), "r")
    assert sorted(set(mixed.refs.tolist())) == [0, 1, 2, 3] and mixed.refs.tolist()[0] == mixed.refs.tolist()[4]


@pytest.mark.parametrize("rows, reason", [
    ([{"hash_ids": [1, 2.0]}], r"hash_ids\[1\] is a float: 2.0 \(a block id is a JSON string or integer"),
    ([{"hash_ids": [True]}], r"hash_ids\[0\] is not a block id: true"),
    ([{"hash_ids": [None]}], r"hash_ids\[0\] is not a block id: null"),
    ([{"hash_ids": [[1]]}], r"hash_ids\[0\] is not a block id: \[1\]"),
    ([{"hash_ids": [1]}, {"prompt_token_ids": [1] * 16}], "field 'prompt_token_ids', but line 1 gives its blocks as "
     "'hash_ids'"),
    ([{"hash_ids": [1]}, {"hash_ids": [1], "prompt_token_ids": [1]}], "both 'hash_ids' and 'prompt_token_ids'"),
    ([{"hash_ids": [1]}, {"tenant": "a"}], "missing field 'hash_ids' or 'prompt_token_ids'"),
    ([{"hash_ids": [1], "session": 1.5}], "field 'session' must be a string or an integer, got 1.5"),
    ([{"hash_ids": [1], "host": True}], "field 'host' must be a string or an integer, got true"),
    ([{"hash_ids": [1], "timestamp": "yesterday"}], "field 'timestamp' must be a non-negative number or an ISO 8601"),
    ([{"hash_ids": [1], "timestamp": -1}], "field 'timestamp' must be a non-negative number or an ISO 8601"),
])
def test_a_bad_requests_line_is_one_error(tmp_path: Path, rows: list[dict], reason: str) -> None:
    p = write(tmp_path, jsonl(*rows))
    with pytest.raises(InputError, match=reason) as err:
        read_trace(p)
    assert str(err.value).startswith(f"{p}:") and "\n" not in str(err.value)


@pytest.mark.parametrize("rows, fmt, reason", [
    ([{"tenant": "a", "timestamp": 1}], "auto", r"^.*:1: no layout has the first line's fields: a request needs "
     "'hash_ids'"),
    ([{"session_id": "s", "hash_ids": [1]}], "auto", "the first line has 'hash_ids' and 'session_id', a field of the "
     "aiperf layout, but not its 'input_length': name the layout, --format requests .* or --format aiperf"),
    ([{"input_length": 5, "output_length": 1, "hash_ids": [1]}, {"hash_ids": [2]}], "auto", r":2: missing field "
     r"'input_length', 'output_length' \(the mooncake layout\) \(chosen by the first line's fields\); --format requests "
     "reads each line's block ids alone"),
    ([{"input_length": 5, "output_length": 1, "hash_ids": ["9f86d081884c7d65"]}], "mooncake", r"hash_ids\[0\] is not an "
     "integer.*; --format requests reads each line's block ids alone, of any JSON string or integer"),
])
def test_a_layout_is_chosen_only_without_doubt_and_an_error_names_the_fix(tmp_path: Path, rows: list[dict], fmt: str,
                                                                          reason: str) -> None:
    p = write(tmp_path, jsonl(*rows))
    with pytest.raises(InputError, match=reason):
        read_trace(p, fmt)
    if "--format requests" in reason:
        assert read_trace(p, "requests").format == "requests"  # the fix the message names reads it


def test_requests_timestamps_out_of_order_are_named_and_sort_orders_them(tmp_path: Path) -> None:
    rows = [{"timestamp": "2026-12-05T10:00:01Z", "hash_ids": ["a"]}, {"timestamp": "2026-12-05T10:00:03Z",
            "hash_ids": ["b"]}, {"timestamp": "2026-12-05T10:00:02+00:00", "hash_ids": ["c", "a"]},
            {"timestamp": "2026-12-05T10:00:02", "hash_ids": ["d"]}]
    p = write(tmp_path, jsonl(*rows))
    t = read_trace(p)
    assert t.disorder.startswith(f"{p}:3: timestamp ") and "earlier than line 2's" in t.disorder
    assert "2 requests go back in all" not in t.disorder and "1 request goes back" in t.disorder  # line 4 ties line 3
    s = read_trace(p, sort=True)
    assert s.sorted and s.disorder is None and s.lines.tolist() == [1, 3, 4, 2]  # stable: line 3 before line 4
    assert s.refs.tolist() == [t.refs[0], t.refs[2], t.refs[3], t.refs[4], t.refs[1]]
    assert s.requests.tolist() == [0, 1, 3, 4, 5] and s.sha256 == t.sha256
    no_time = write(tmp_path, jsonl({"timestamp": 1, "hash_ids": [1]}, {"hash_ids": [2]}), "n.jsonl")
    with pytest.raises(InputError, match=r"n.jsonl:2: no field 'timestamp': --sort orders"):
        read_trace(no_time, sort=True)
    assert read_trace(TRACES / SAMPLES["mooncake"]).disorder is None  # its line 3 has no timestamp: passed over


def test_a_log_that_is_no_trace_says_which_layout_was_tried_and_where_to_turn() -> None:
    with pytest.raises(InputError, match=r"vllm.log:1: not a non-negative integer id: .* \(the ids layout: the first "
                                         r"line is not a JSON object; .*docs/export.md\)"):
        read_trace(TRACES / "export" / "vllm.log")

