import Lake
open Lake DSL

package pycert where
  -- Every library file is a `module` (the wasm build treats all files so); natively that needs this.
  leanOptions := #[⟨`experimental.module, true⟩]

/-- The theorem library: `lean/Pycert.lean` and every file under `lean/Pycert/`. -/
@[default_target]
lean_lib Pycert where
  srcDir := "lean"
  globs := #[.andSubmodules `Pycert]

/-- The instance files pycert emits from data (`certificates/lean/`, the ignored `derived/` too):
each is its own module, named by its path below `certificates/lean`. -/
@[default_target]
lean_lib Instances where
  srcDir := "certificates/lean"
  globs := #[.submodules .anonymous]
