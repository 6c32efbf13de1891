"""The Lean side: the backends (embedded wasm, native Lake), the build system, Lean sources and diagnostics."""
