"""The wasm toolchain's one loader patch: same answers as Emscripten's lookup, in O(1)."""

from __future__ import annotations

import json
import subprocess

import pytest

from pycert.core.errors import PycertError
from pycert.lean import toolchain as tc
from pycert.lean.wasm import WasmBackend

# The generated ``__dlsym_js`` around the patched statement, reduced to what the lookup touches.
DLSYM = "var dlsym=(lib,symbol)=>{var newSymIndex;{}return newSymIndex};"


def lookup_js(body: str) -> str:
    return DLSYM.replace("{}", body)


def run_node(script: str) -> object:
    proc = subprocess.run([str(tc.node_executable()), "-e", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_patch_replaces_the_one_scan_and_the_pool_size() -> None:
    src = "a;" + tc._DLSYM_SCAN + "b;" + tc._POOL_PRESPAWN + "c;"
    out = tc.patch_loader(src)
    assert tc._DLSYM_SCAN not in out and tc._POOL_PRESPAWN not in out and tc._POOL_ONE in out
    assert out.startswith("a;") and out.endswith("c;")


@pytest.mark.parametrize("src", ["no lookup here", tc._DLSYM_SCAN * 2 + tc._POOL_PRESPAWN, tc._DLSYM_SCAN,
                                 tc._DLSYM_SCAN + tc._POOL_PRESPAWN * 2])
def test_patch_refuses_an_unexpected_loader(src: str) -> None:
    with pytest.raises(PycertError, match="pinned"):
        tc.patch_loader(src)


def test_patched_lookup_gives_the_same_index_as_the_scan() -> None:
    """Every name, an unknown name, and a name exported after the first lookup."""
    script = f"""
    const scan = {lookup_js(tc._DLSYM_SCAN)[len("var dlsym="):-1]};
    const indexed = {lookup_js(tc._DLSYM_INDEXED)[len("var dlsym="):-1]};
    const make = () => {{ const e = {{}}; for (let i = 0; i < 5000; i++) e["f" + (i * 7919 % 5000)] = i; return {{exports: e}}; }};
    const a = make(), b = make();
    const names = [...Object.keys(a.exports), "missing", "f4999", "f0"];
    const out = names.map(n => [scan(a, n), indexed(b, n)]);
    a.exports.late = 1; b.exports.late = 1;
    out.push([scan(a, "late"), indexed(b, "late")], [scan(a, "missing"), indexed(b, "missing")]);
    console.log(JSON.stringify(out));
    """
    pairs = run_node(script)
    assert len(pairs) == 5005
    assert all(x == y for x, y in pairs), [p for p in pairs if p[0] != p[1]][:5]
    assert pairs[-2] == [5000, 5000] and pairs[-1] == [-1, -1]


def test_the_installed_toolchain_runs_the_patched_loader(wasm: WasmBackend) -> None:
    assert wasm.lean_js.name == tc.LOADER
    text = wasm.lean_js.read_text(encoding="utf-8")
    assert tc._DLSYM_INDEXED in text and tc._DLSYM_SCAN not in text
    assert tc._POOL_ONE in text and tc._POOL_PRESPAWN not in text
    assert (wasm.lean_js.parent / "lean.js").read_text(encoding="utf-8").count(tc._DLSYM_SCAN) == 1
