(* gcbench.ml: the Ellis/Kovac/Boehm GCBench shape in OCaml.  Empty is an
   immediate, so a node is one four-field block as in the C programs.
   Usage: gcbench-ocaml [REPS]  (default 10) *)

type node =
  | Empty
  | Node of { mutable left : node; mutable right : node; i : int; j : int }

let stretch_depth = 18
let long_lived_depth = 16
let array_size = 500000
let min_depth = 4
let max_depth = 16

let tree_size d = (1 lsl (d + 1)) - 1
let new_node l r = Node { left = l; right = r; i = 0; j = 0 }

let rec populate depth node =
  match node with
  | Node n when depth > 0 ->
    let depth = depth - 1 in
    n.left <- new_node Empty Empty;
    n.right <- new_node Empty Empty;
    populate depth n.left;
    populate depth n.right
  | _ -> ()

let rec make_tree depth =
  if depth <= 0 then new_node Empty Empty
  else
    let l = make_tree (depth - 1) in
    new_node l (make_tree (depth - 1))

let rec count = function
  | Node { left = Empty; _ } | Empty -> 1
  | Node n -> 1 + count n.left + count n.right

let time_construction depth =
  let n = 2 * tree_size stretch_depth / tree_size depth in
  let tree = ref Empty in
  for _ = 1 to n do
    tree := new_node Empty Empty;
    populate depth !tree
  done;
  let s = n * count !tree in
  for _ = 1 to n do
    tree := make_tree depth
  done;
  s + n * count !tree

let () =
  let reps = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 10 in
  let sum = ref 0 in
  let c = count (make_tree stretch_depth) in
  Printf.printf "stretch tree of depth %d\t check: %d\n" stretch_depth c;
  sum := !sum + c;
  let long_lived = new_node Empty Empty in
  populate long_lived_depth long_lived;
  let a = Array.make array_size 0.0 in
  for i = 1 to array_size / 2 - 1 do
    a.(i) <- 1.0 /. float_of_int i
  done;
  for _ = 1 to reps do
    let d = ref min_depth in
    while !d <= max_depth do
      sum := !sum + time_construction !d;
      d := !d + 2
    done
  done;
  let c = count long_lived in
  Printf.printf "long lived tree of depth %d\t check: %d\n" long_lived_depth c;
  sum := !sum + c;
  let asum = ref 0.0 in
  Array.iter (fun x -> asum := !asum +. x) a;
  Printf.printf "array sum: %.6f\n" !asum;
  Printf.printf "checksum: %d\n" !sum
