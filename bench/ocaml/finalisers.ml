(* finalisers.ml: the finaliser workload in OCaml, as in finalisers.c: N
   two-field records each given a finaliser with Gc.finalise (one top-level
   function: no closure per object), one in 16 kept in a ring of 16384
   slots; at the end the ring is emptied and Gc.full_major is called until
   every finaliser has run (at most 10 times).
   Usage: finalisers-ocaml [N]  (default 10000000) *)

type obj = { id : int; pad : int }

let r = 16384
let calls = ref 0
let sum = ref 0

let count_fin o =
  incr calls;
  sum := !sum + o.id

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 10000000 in
  let empty = { id = -1; pad = 0 } in
  let ring = Array.make r empty in
  for i = 0 to n - 1 do
    let o = { id = i; pad = i lxor 0x5555 } in
    Gc.finalise count_fin o;
    if i mod 16 = 0 then ring.((i / 16) mod r) <- o
  done;
  Array.fill ring 0 r empty;
  let k = ref 0 in
  while !k < 10 && !calls < n do
    Gc.full_major ();
    incr k
  done;
  Printf.printf "finalised: %d\n" !calls;
  Printf.printf "checksum: %d\n" !sum
