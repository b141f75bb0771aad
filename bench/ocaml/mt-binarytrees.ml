(* mt-binarytrees.ml: binarytrees on D OCaml 5 domains, the peer of
   mt-binarytrees.c.  The iterations of each depth are split into D
   contiguous ranges; the main domain builds the stretch and long-lived
   trees, spawns D-1 domains (Domain.spawn) for ranges 1..D-1 and runs
   range 0 itself.  Same output as binarytrees N.
   Usage: mt-binarytrees-ocaml [N [D]]  (defaults 20, 2) *)

type tree = Leaf | Node of tree * tree

(* Every leaf is a block of its own, as in binarytrees.ml. *)
let rec make d =
  if d = 0 then Node (Sys.opaque_identity Leaf, Leaf)
  else Node (make (d - 1), make (d - 1))

let rec check = function
  | Node (Leaf, _) -> 1
  | Node (l, r) -> 1 + check l + check r
  | Leaf -> 0

let min_depth = 4

(* Range k of every depth: the check sums, one per depth. *)
let run_range ~max_depth ~domains k =
  Array.init ((max_depth - min_depth) / 2 + 1) (fun j ->
      let d = min_depth + (2 * j) in
      let iters = 1 lsl (max_depth - d + min_depth) in
      let lo = iters * k / domains and hi = iters * (k + 1) / domains in
      let c = ref 0 in
      for _ = lo to hi - 1 do
        c := !c + check (make d)
      done;
      !c)

let () =
  let arg i default =
    if Array.length Sys.argv > i then int_of_string Sys.argv.(i) else default
  in
  let n = arg 1 20 and domains = arg 2 2 in
  let max_depth = max 6 n in
  if domains < 1 then begin
    prerr_endline "mt-binarytrees-ocaml: at least one domain";
    exit 2
  end;
  let sum = ref 0 in
  let c = check (make (max_depth + 1)) in
  Printf.printf "stretch tree of depth %d\t check: %d\n" (max_depth + 1) c;
  sum := !sum + c;
  let long_lived = make max_depth in
  let spawned =
    Array.init (domains - 1) (fun i ->
        Domain.spawn (fun () -> run_range ~max_depth ~domains (i + 1)))
  in
  let mine = run_range ~max_depth ~domains 0 in
  let checks = mine :: Array.to_list (Array.map Domain.join spawned) in
  Array.iteri
    (fun j _ ->
      let d = min_depth + (2 * j) in
      let c = List.fold_left (fun acc r -> acc + r.(j)) 0 checks in
      Printf.printf "%d\t trees of depth %d\t check: %d\n"
        (1 lsl (max_depth - d + min_depth)) d c;
      sum := !sum + c)
    mine;
  let c = check long_lived in
  Printf.printf "long lived tree of depth %d\t check: %d\n" max_depth c;
  sum := !sum + c;
  Printf.printf "checksum: %d\n" !sum
