import Lake
open Lake DSL

package pycert where
  -- Every library file is a `module` (the wasm build treats all files so); natively that needs this.
  leanOptions := #[⟨`experimental.module, true⟩]

@[default_target]
lean_lib Pycert where
  srcDir := "lean"
  globs := #[.submodules `Pycert]
