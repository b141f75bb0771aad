(* fibers.ml: the lightweight threads workload in OCaml 5, the algorithm of
   fibers.c with effect handlers (Effect.Deep) in place of mgc's fibers and
   continuations.  Thread i is a function looping over its S steps with its
   accumulator {sum; count} and history {h0; h1; h2; h3} in local variables,
   both allocated fresh each step, as is the step's short-lived box {v}
   (kept by Sys.opaque_identity: ocamlopt would otherwise not allocate it);
   it performs Yield before each step.  The handler puts the continuation
   at the tail of a ring of T slots; the scheduler takes continuations at
   its head and resumes them with [continue k ()]: S rounds, each resuming
   threads 0 .. T-1 in order.  A thread that has done its S steps returns
   sum + count + h0 + h1 + h2, which the handler adds to the checksum.
   Needs OCaml 5 (effects): bench.mk builds it only with an ocamlopt >= 5.
   Usage: fibers-ocaml [T S]  (defaults 10000 1000) *)

open Effect
open Effect.Deep

type _ Effect.t += Yield : unit Effect.t

type acc = { sum : int; count : int }
type hist = { h0 : int; h1 : int; h2 : int; h3 : int }
type box = { v : int }

let thread s i () =
  let rec loop acc hist =
    if acc.count = s then acc.sum + acc.count + hist.h0 + hist.h1 + hist.h2
    else begin
      perform Yield;
      let b = Sys.opaque_identity { v = (i * 31 + acc.count * 7) mod 1000 } in
      let acc = { sum = acc.sum + b.v; count = acc.count + 1 } in
      let hist = { h0 = b.v; h1 = hist.h0; h2 = hist.h1; h3 = hist.h2 } in
      loop acc hist
    end
  in
  loop { sum = 0; count = 0 } { h0 = 0; h1 = 0; h2 = 0; h3 = 0 }

let () =
  let t = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 10000 in
  let s = if Array.length Sys.argv > 2 then int_of_string Sys.argv.(2)
    else 1000 in
  (* Made at the first Yield, filled with its continuation: there is no
     dummy continuation to start with, and an option would allocate a
     block per Yield, which mgc's queue does not. *)
  let ring : (unit, unit) continuation array ref = ref [||] in
  let head = ref 0 and len = ref 0 and checksum = ref 0 in
  let handler =
    {
      retc = (fun r -> checksum := !checksum + r);
      exnc = raise;
      effc =
        (fun (type a) (e : a Effect.t) ->
          match e with
          | Yield ->
              Some
                (fun (k : (a, unit) continuation) ->
                  if Array.length !ring = 0 then
                    ring := Array.make t k;
                  !ring.((!head + !len) mod t) <- k;
                  incr len)
          | _ -> None);
    }
  in
  for i = 0 to t - 1 do
    match_with (thread s i) () handler
  done;
  while !len > 0 do
    let k = !ring.(!head) in
    head := (!head + 1) mod t;
    decr len;
    continue k ()
  done;
  Printf.printf "threads: %d steps: %d\n" t s;
  Printf.printf "checksum: %d\n" !checksum
