module

public import Lean.Elab.Frontend

/-!
pycert's Lean worker (`pycert.lean.worker`): one Lean process that compiles module after module, each
with `Lean.Elab.runFrontend`, the function the `lean` executable itself runs on a file, so each module
gets the same elaboration, kernel check and `.olean` files as `lean --json -o` would give it, without
paying the process's start (a third of a small module's time on the wasm Lean) again.

Job `n` is the file `<dir>/<n>.job`, written whole by a rename: `<source>\t<module>\t<olean>\t<path>`,
or `stop`. `<path>` is where this job's imports are found (directories joined by `:`, before the
toolchain's own), so that one worker serves builds whose compiled files live in different trees (the
warm checker, `pycert.lean.daemon`); empty, the worker's own `LEAN_PATH` stands. The worker prints
Lean's messages (JSON, one a line) and then one line `{"pycert_done":<n>,"ok":<bool>}`, with
`"error":<text>` added when the job did not run to Lean's verdict (a file it could not read or write):
that is no verdict on the module. Standard input cannot be read from a pipe by the wasm Lean (it
reports a hardware fault), hence the files.
-/

open Lean

/-- The job file `path`, once it exists. Every 5 s of waiting the worker says it is alive on its standard
output: when its owner has died (killed, so that it could not stop the worker), the pipe is closed, the
write fails and the worker ends, rather than wait for ever with its gigabytes. -/
public partial def awaitJob (out : IO.FS.Stream) (path : System.FilePath) (k : Nat := 0) : IO String := do
  if ← path.pathExists then IO.FS.readFile path else
    IO.sleep 20
    if k % 250 == 249 then
      out.putStrLn "{\"pycert_alive\":true}"
      out.flush
    awaitJob out path (k + 1)

/-- One module: elaborated with one thread (`Elab.async` off, as pycert's `lean` runs are), its
`.olean` files written when Lean reports no error. -/
public def compileOne (src mod olean : String) : IO Bool := do
  let input ← IO.FS.readFile src
  let opts := ({} : Options).setBool `Elab.async false
  let env? ← Lean.Elab.runFrontend input opts src (String.toName mod) 0 (some olean) none true
  return env?.isSome

/-- The search path for a job: its own directories, then the worker's initial path (the toolchain).
(Written out: the interpreter cannot run the toolchain's private compiled helpers that `List.map` or
`List.foldr` would call here, "Unknown constant".) -/
public def jobPath (base : SearchPath) : List String → SearchPath
  | [] => base
  | d :: ds => if d.isEmpty then jobPath base ds else System.FilePath.mk d :: jobPath base ds

public partial def serve (dir : String) (out : IO.FS.Stream) (base : SearchPath) (n : Nat) : IO UInt32 := do
  let job ← awaitJob out (System.FilePath.mk dir / s!"{n}.job")
  match job.splitOn "\t" with
  | [src, mod, olean, dirs] =>
      searchPathRef.set (jobPath base (dirs.splitOn ":"))
      let done ← try
          let ok ← compileOne src mod olean
          pure [("ok", Json.bool ok)]
        catch e => pure [("ok", Json.bool false), ("error", Json.str (toString e))]
      out.putStrLn (Json.compress (Json.mkObj (("pycert_done", Json.num n) :: done)))
      out.flush
      serve dir out base (n + 1)
  | _ => pure 0

public def main (args : List String) : IO UInt32 := do
  match args with
  | [dir] => serve dir (← IO.getStdout) (← searchPathRef.get) 0
  | _ => pure 2
