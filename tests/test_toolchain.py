"""The wasm toolchain's loader patches: the same answers as Emscripten's lookup, in O(1); one pthread worker;
the export bindings nobody reads left out, the ones the loader reads kept."""

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


# The generated export bindings, reduced: 60 exports, of which the loader's own code reads three (one by a
# string) and a global read through ``.value``, and one binds under another name.
UNREAD = [f"l_f{i}" for i in range(56)]
EXPORTS = (
    "var _main,_malloc,_used_by_string,__ZTV,_" + ",_".join(UNREAD) + ";"
    + "function assignWasmExports(wasmExports){"
    + '_main=Module["_main"]=wasmExports["__main_argc_argv"];'
    + '_malloc=Module["_malloc"]=wasmExports["malloc"];'
    + '_used_by_string=Module["_used_by_string"]=wasmExports["used_by_string"];'
    + '__ZTV=Module["__ZTV"]=wasmExports["_ZTV"].value;'
    + "".join(f'_{n}=Module["_{n}"]=wasmExports["{n}"];' for n in UNREAD)[:-1] + "}"
    + 'var callMain=()=>_malloc(8)+__ZTV;var key="_used_by_string";'
)


def loader(exports: str = EXPORTS) -> str:
    return "a;" + tc._DLSYM_SCAN + "b;" + tc._POOL_PRESPAWN + exports + "c;"


def test_patch_replaces_the_one_scan_and_the_pool_size() -> None:
    out = tc.patch_loader(loader())
    assert tc._DLSYM_SCAN not in out and tc._POOL_PRESPAWN not in out and tc._POOL_ONE in out
    assert out.startswith("a;") and out.endswith("c;")


def test_patch_keeps_every_export_binding_the_loader_reads() -> None:
    """Run both in Node: the kept variables and Module properties hold the same exports, the unread ones are
    gone from both, and nothing else of the file changed."""
    out = tc.patch_loader(loader())
    assert all(n not in out for n in UNREAD) and out.count("Module[") == 4
    probe = ('const wasmExports={__main_argc_argv:1,malloc:2,used_by_string:3,_ZTV:{value:4},'
             + ",".join(f"{n}:9" for n in UNREAD) + "};var Module={};")
    show = ";assignWasmExports(wasmExports);console.log(JSON.stringify([[_main,_malloc,_used_by_string,__ZTV],Module]))"
    whole = run_node(probe + EXPORTS + show)
    trimmed = tc.patch_loader(loader())
    trimmed = trimmed[trimmed.index("var _main"):trimmed.rindex("c;")]
    assert run_node(probe + trimmed + show) == [whole[0], {k: v for k, v in whole[1].items() if k[1:] not in UNREAD}]


@pytest.mark.parametrize("src", [
    "no lookup here", tc._DLSYM_SCAN * 2 + tc._POOL_PRESPAWN + EXPORTS, tc._DLSYM_SCAN,
    tc._DLSYM_SCAN + tc._POOL_PRESPAWN * 2 + EXPORTS, loader(EXPORTS.replace("function assign", "function other")),
    loader(EXPORTS.replace('wasmExports["malloc"];', 'wasmExports["malloc"];{')),  # a body that is not bindings
    loader(EXPORTS.replace("var _main,", "var _main,x;var _q,")),  # a declaration that is not the exports'
])
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
    assert len(text) < 2_000_000 and "_lean_mk_string" not in text  # the 89 MB of bindings left out
    assert (wasm.lean_js.parent / "lean.js").read_text(encoding="utf-8").count(tc._DLSYM_SCAN) == 1
