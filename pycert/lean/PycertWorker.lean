module

public import Lean.Elab.Frontend

/-!
pycert's Lean worker (`pycert.lean.worker`): one Lean process that compiles module after module, each
with `Lean.Elab.runFrontend`, the function the `lean` executable itself runs on a file, so each module
gets the same elaboration, kernel check and `.olean` files as `lean --json -o` would give it, without
paying the process's start (a third of a small module's time on the wasm Lean) again.

Job `n` is the file `<dir>/<n>.job`, written whole by a rename: `<source>\t<module>\t<olean>`, or
`stop`. The worker prints Lean's messages (JSON, one a line) and then one line
`{"pycert_done":<n>,"ok":<bool>}`. Standard input cannot be read from a pipe by the wasm Lean (it reports
a hardware fault), hence the files.
-/

open Lean

/-- The job file `path`, once it exists. -/
public partial def awaitJob (path : System.FilePath) : IO String := do
  if ← path.pathExists then IO.FS.readFile path else
    IO.sleep 20
    awaitJob path

/-- One module: elaborated with one thread (`Elab.async` off, as pycert's `lean` runs are), its
`.olean` files written when Lean reports no error. -/
public def compileOne (src mod olean : String) : IO Bool := do
  let input ← IO.FS.readFile src
  let opts := ({} : Options).setBool `Elab.async false
  let env? ← Lean.Elab.runFrontend input opts src (String.toName mod) 0 (some olean) none true
  return env?.isSome

public partial def serve (dir : String) (out : IO.FS.Stream) (n : Nat) : IO UInt32 := do
  let job ← awaitJob (System.FilePath.mk dir / s!"{n}.job")
  match job.splitOn "\t" with
  | [src, mod, olean] =>
      let ok ← try compileOne src mod olean catch e => do
        out.putStrLn (Json.compress (Json.mkObj [("severity", "error"), ("fileName", src),
          ("pos", Json.mkObj [("line", 1), ("column", 0)]), ("data", s!"pycert worker: {e}")]))
        pure false
      out.putStrLn s!"\{\"pycert_done\":{n},\"ok\":{if ok then "true" else "false"}}"
      out.flush
      serve dir out (n + 1)
  | _ => pure 0

public def main (args : List String) : IO UInt32 := do
  match args with
  | [dir] => serve dir (← IO.getStdout) 0
  | _ => pure 2
