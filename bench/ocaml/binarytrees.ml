(* binarytrees.ml: the binarytrees workload in OCaml, the peer mgc is
   modelled on.  Usage: binarytrees-ocaml [N]  (default 20) *)

type tree = Leaf | Node of tree * tree

(* A leaf is a node whose two children are empty, as in the C programs.
   Written plainly, [Node (Leaf, Leaf)] is a constant that ocamlopt
   allocates once, statically: every leaf would be one shared block and
   OCaml would allocate half the words the other implementations do.
   [Sys.opaque_identity] keeps the allocation, so that every
   implementation allocates the same blocks. *)
let rec make d =
  if d = 0 then Node (Sys.opaque_identity Leaf, Leaf)
  else Node (make (d - 1), make (d - 1))

let rec check = function
  | Node (Leaf, _) -> 1
  | Node (l, r) -> 1 + check l + check r
  | Leaf -> 0

let () =
  let n =
    if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 20 in
  let min_depth = 4 in
  let max_depth = max 6 n in
  let sum = ref 0 in
  let c = check (make (max_depth + 1)) in
  Printf.printf "stretch tree of depth %d\t check: %d\n" (max_depth + 1) c;
  sum := !sum + c;
  let long_lived = make max_depth in
  let d = ref min_depth in
  while !d <= max_depth do
    let iters = 1 lsl (max_depth - !d + min_depth) in
    let c = ref 0 in
    for _ = 1 to iters do
      c := !c + check (make !d)
    done;
    Printf.printf "%d\t trees of depth %d\t check: %d\n" iters !d !c;
    sum := !sum + !c;
    d := !d + 2
  done;
  let c = check long_lived in
  Printf.printf "long lived tree of depth %d\t check: %d\n" max_depth c;
  sum := !sum + c;
  Printf.printf "checksum: %d\n" !sum
