module

prelude
public import Pycert.SortedOptimum
public import Pycert.AdmissionOptimum
import Init.Omega

/-!
# The optimum with bypass on a whole trace, and the prefix caches that reach it

The sorted instance of `Pycert.SortedTrace` checks the bound with bypass in the same
whole-plane operations as the bound without:

* a cut plane and its running count `A` (`cutsOK`), and `flags M W same 0 A`: the places of `same`
  whose two references see the same count, i.e. no cut at or after the earlier one and before the
  later one (`freeA_le_of_checks`); with `m` cuts and `F` flags, every cache of `C` blocks with
  bypass hits at most `C · m + F` times (`boundedA_of_checks`);
* a witness `s`, `e` checked by `witnessOK` and counted by `AS`, `AE` (`cutsOK`), and
  `coverOK n C (AS.map (· >>> 1)) AE`: `AS(t + 1) ≤ AE(t + 1) + C` at every step, i.e. at most `C`
  starts live; `AE(n)` ends is then the optimum with bypass (`optimumA_of_checks`);
* `prefixOK n first e`: every end that does not start its request (`first`) follows an end; then a
  prefix cache reaches the optimum too (`prefixOptimum_of_checks`).

What this file does not say: that the cut list or the witness are good ones (a bad one fails a check
or the headline's inequality), nor anything outside the models of `Pycert.Admission` and
`Pycert.PrefixCache`; the request boundaries `first` are data, like the trace.
-/

namespace Pycert.SortedAdmission
open Pycert.Bits Pycert.Planes Pycert.Ceiling Pycert.Capacity Pycert.SortedTrace Pycert.SortedOptimum
open Pycert.Admission Pycert.PrefixCache

/-- **The free reuses with bypass, counted on sorted places.** If the references of `r`
sit as `Adjacent` says, `A` counts the cut plane `c` and the places of `same` where both references
see the same cut count number `F`, at most `F` references reuse a block with no cut at or after the
previous reference to it and before them (`Pycert.Admission.FreeA`). -/
public theorem freeA_le_of_checks {r : List Nat} {N M : Nat} {W : List Nat} {same c : Nat} {A : List Nat} {F : Nat}
    (hN : r.length = N) (hadj : Adjacent r (2 ^ M) (net M W) same) (hcut : cutsOK N A c = true)
    (hflags : popcount M (flags M W same 0 A) = F) : count (FreeA r (cutsOf c N)) r.length ≤ F := by
  rw [← hflags, popcount_eq, hN]
  apply count_le_count (FreeA r (cutsOf c N)) _ (unperm (2 ^ M) (net M W))
  · intro j hj ⟨i', hi'j, e', hY'⟩
    obtain ⟨i, hij, ei, gap⟩ := exists_latest (fun i => nth r i = nth r j) j ⟨i', hi'j, e'⟩
    have hii' : i' ≤ i := Nat.le_of_not_lt fun l => gap i' l hi'j e'
    obtain ⟨hnext, hpM, hs⟩ := hadj i j (by omega) hij ei gap
    refine ⟨hpM, flag_at (by omega) hpM hs ?_⟩
    rw [perm_unperm, show unperm (2 ^ M) (net M W) j - 1 = unperm (2 ^ M) (net M W) i by omega, perm_unperm]
    have nocut : ∀ u, i ≤ u → u < j → c.testBit u = false := fun u h1 h2 => by
      cases hc : c.testBit u
      · rfl
      · exact absurd ⟨by omega, h2⟩ (hY' u ((mem_cutsOf c N u).2 ⟨by omega, hc⟩))
    rw [val_A_gap hcut j hij (by omega) (fun u h1 h2 => nocut u (by omega) h2)]
    unfold bit
    rw [nocut i (Nat.le_refl i) hij, Nat.zero_testBit]
  · intro a b _ _ _ _ e
    have := congrArg (perm (2 ^ M) (net M W)) e
    rwa [perm_unperm, perm_unperm] at this

/-- `Pycert.Admission.BoundedA` from the checks of a sorted instance: with `m` cuts and `F` flags, no
cache of `C` blocks with bypass hits more than `C · m + F ≤ H` times. -/
public theorem boundedA_of_checks {r : List Nat} {N M : Nat} {W : List Nat} {same c : Nat} {A : List Nat}
    {F m C H : Nat} (hN : r.length = N) (hadj : Adjacent r (2 ^ M) (net M W) same) (hcut : cutsOK N A c = true)
    (hflags : popcount M (flags M W same 0 A) = F) (hm : val A N = m) (hH : C * m + F ≤ H) :
    BoundedA r N C H := by
  refine ⟨hN, fun K hK => ?_⟩
  have hY : (cutsOf c N).length = m := by rw [length_cutsOf, ← val_A_count hcut N (Nat.le_refl _), hm]
  have h1 := hits_le_freeA hK (cutsOf c N)
  have h2 := freeA_le_of_checks hN hadj hcut hflags
  rw [hY] at h1
  omega

/-- What `coverOK` on the start counts read one step later says: at most `C` starts live at every
step, given ends that each close the pair of a start (`f j`, the start of `j`'s pair). -/
public theorem live_le {r : List Nat} {n C s e : Nat} {AS AE : List Nat} (f : Nat → Nat) (hlen : r.length = n)
    (hf : ∀ j, j < r.length → e.testBit j = true → s.testBit (f j) = true ∧ f j < j ∧ nth r (f j) = nth r j ∧
      ∀ u, f j < u → u < j → nth r u ≠ nth r j)
    (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true) (hcov : coverOK n C (AS.map (· >>> 1)) AE = true) :
    ∀ t, t < r.length → count (fun i => s.testBit i = true ∧ Live r i t) r.length ≤ C := by
  intro t ht
  rw [hlen] at ht ⊢
  have cS := val_A_count hAS (t + 1) ht
  have cE := val_A_count hAE (t + 1) ht
  have cov := cover_spec hcov t ht
  have hv : val (AS.map (· >>> 1)) t = val AS (t + 1) :=
    val_map _ (fun P => by rw [Nat.testBit_shiftRight, Nat.add_comm]) AS
  rw [hv] at cov
  have split := count_split (fun i => s.testBit i = true ∧ i < t + 1) (fun i => Live r i t) n
  have a1 : count (fun i => s.testBit i = true ∧ Live r i t) n =
      count (fun i => (s.testBit i = true ∧ i < t + 1) ∧ Live r i t) n :=
    count_congr fun i _ => ⟨fun ⟨a, b⟩ => ⟨⟨a, by have := b.1; omega⟩, b⟩, fun ⟨⟨a, _⟩, b⟩ => ⟨a, b⟩⟩
  have a2 : count (fun i => s.testBit i = true ∧ i < t + 1) n = count (fun i => s.testBit i = true) (t + 1) := by
    rw [count_stop (m := t + 1) ht (fun j hj h => by omega)]
    exact count_congr fun i hi => ⟨fun h => h.1, fun h => ⟨h, hi⟩⟩
  have a3 : count (fun j => e.testBit j = true) (t + 1) ≤
      count (fun i => (s.testBit i = true ∧ i < t + 1) ∧ ¬ Live r i t) n := by
    refine count_le_count _ _ f (fun j hj ej => ?_) (fun a b ha hb ea eb hab => ?_)
    · obtain ⟨sj, hfj, ej', _⟩ := hf j (by omega) ej
      exact ⟨by omega, ⟨sj, by omega⟩, fun ⟨_, g⟩ => g j hfj (by omega) ej'.symm⟩
    · obtain ⟨_, ha1, ea', gapa⟩ := hf a (by omega) ea
      obtain ⟨_, hb1, eb', gapb⟩ := hf b (by omega) eb
      rcases Nat.lt_trichotomy a b with l | q | g
      · exact absurd (show nth r a = nth r b by rw [← ea', hab, eb']) (gapb a (by omega) l)
      · exact q
      · exact absurd (show nth r b = nth r a by rw [← eb', ← hab, ea']) (gapa b (by omega) g)
  omega

/-- What the admission checks of a sorted instance give: the bound, at most `C` live starts, every end
closing a start's pair, and `H` ends. -/
theorem admission_facts {r : List Nat} {n M : Nat} {W : List Nat} {same c s e : Nat} {A AS AE : List Nat}
    {F m C H : Nat} (hlen : r.length = n) (hn : n ≤ 2 ^ M) (hadj : Adjacent r (2 ^ M) (net M W) same)
    (hlink : Linked r M W same) (hcut : cutsOK n A c = true) (hflags : popcount M (flags M W same 0 A) = F)
    (hm : val A n = m) (hH : C * m + F ≤ H) (hw : witnessOK M W same s e = true) (hAS : cutsOK n AS s = true)
    (hAE : cutsOK n AE e = true) (hcov : coverOK n C (AS.map (· >>> 1)) AE = true) (hh : val AE n = H) :
    BoundedA r n C H ∧ (∀ t, t < r.length → count (fun i => s.testBit i = true ∧ Live r i t) r.length ≤ C) ∧
      (∀ j, j < r.length → e.testBit j = true →
        ∃ i, s.testBit i = true ∧ i < j ∧ nth r i = nth r j ∧ ∀ u, i < u → u < j → nth r u ≠ nth r j) ∧
      count (fun j => e.testBit j = true) r.length = H := by
  have ends := ends_spec (by omega) hadj hlink hw
  refine ⟨boundedA_of_checks hlen hadj hcut hflags hm hH, live_le _ hlen ends hAS hAE hcov,
    fun j hj ej => ⟨_, ends j hj ej⟩, ?_⟩
  rw [hlen, ← hh, val_A_count hAE n (Nat.le_refl _)]

/-- **The optimum with bypass on a whole trace.** The checks above make `H` the optimum
at `C` blocks for caches with bypass (`Pycert.Admission.OptimumA`). It says nothing
outside the model of `Pycert.Admission`. -/
public theorem optimumA_of_checks {r : List Nat} {n M : Nat} {W : List Nat} {same c s e : Nat}
    {A AS AE : List Nat} {F m C H : Nat} (hlen : r.length = n) (hn : n ≤ 2 ^ M)
    (hadj : Adjacent r (2 ^ M) (net M W) same) (hlink : Linked r M W same) (hcut : cutsOK n A c = true)
    (hflags : popcount M (flags M W same 0 A) = F) (hm : val A n = m) (hH : C * m + F ≤ H)
    (hw : witnessOK M W same s e = true) (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true)
    (hcov : coverOK n C (AS.map (· >>> 1)) AE = true) (hh : val AE n = H) : OptimumA r n C H := by
  obtain ⟨hb, live, ends, cnt⟩ := admission_facts hlen hn hadj hlink hcut hflags hm hH hw hAS hAE hcov hh
  exact optimumA_of hb _ _ live ends cnt

/-- Every end `j + 1 < N` that does not start its request follows an end: `e` and `first` are planes in
time order. -/
@[expose] public def prefixOK (N first e : Nat) : Bool :=
  Nat.beq (e &&& (((e <<< 1) ||| first) ^^^ (2 ^ N - 1))) 0

theorem prefix_spec {N first e : Nat} (h : prefixOK N first e = true) :
    ∀ j, j + 1 < N → e.testBit (j + 1) = true → first.testBit (j + 1) = true ∨ e.testBit j = true := by
  intro j hj ej
  have := congrArg (fun z => z.testBit (j + 1)) (Nat.eq_of_beq_eq_true h)
  have ho : (2 ^ N - 1).testBit (j + 1) = true := by rw [Nat.testBit_two_pow_sub_one, decide_eq_true hj]
  simp only [Nat.testBit_and, Nat.testBit_xor, Nat.testBit_or, Nat.testBit_shiftLeft, ej, ho,
    Nat.zero_testBit, Nat.add_sub_cancel] at this
  revert this
  cases first.testBit (j + 1) <;> cases e.testBit j <;> simp

/-- **A prefix cache reaches the optimum with bypass.** The checks of `optimumA_of_checks`
and `prefixOK` make `H` the optimum at `C` blocks for prefix caches over the requests that `first`
starts (`Pycert.PrefixCache.PrefixOptimum`). It says nothing outside the model of
`Pycert.PrefixCache`; `first` is data, like the trace. -/
public theorem prefixOptimum_of_checks {r : List Nat} {n M : Nat} {W : List Nat} {same c s e first : Nat}
    {A AS AE : List Nat} {F m C H : Nat} (hlen : r.length = n) (hn : n ≤ 2 ^ M)
    (hadj : Adjacent r (2 ^ M) (net M W) same) (hlink : Linked r M W same) (hcut : cutsOK n A c = true)
    (hflags : popcount M (flags M W same 0 A) = F) (hm : val A n = m) (hH : C * m + F ≤ H)
    (hw : witnessOK M W same s e = true) (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true)
    (hcov : coverOK n C (AS.map (· >>> 1)) AE = true) (hh : val AE n = H) (hpre : prefixOK n first e = true) :
    PrefixOptimum r first.testBit n C H := by
  obtain ⟨hb, live, ends, cnt⟩ := admission_facts hlen hn hadj hlink hcut hflags hm hH hw hAS hAE hcov hh
  exact prefixOptimum_of hb _ _ live ends (fun j hj ej => prefix_spec hpre j (by omega) ej) cnt

end Pycert.SortedAdmission
