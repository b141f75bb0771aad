(* survive.ml: the promotion workload in OCaml: a queue of 100000 lists of
   10 cells, round r replacing the oldest list, as in survive.c.
   Usage: survive-ocaml [ROUNDS]  (default 4000000) *)

let queue_len = 100000
let cells = 10

let make_list g =
  let rec go k acc = if k = cells then acc else go (k + 1) ((10 * g + k) :: acc)
  in
  go 0 []

let () =
  let rounds = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 4000000 in
  let queue = Array.make queue_len [] in
  for g = 0 to queue_len - 1 do
    queue.(g) <- make_list g
  done;
  Gc.minor ();
  for r = 0 to rounds - 1 do
    let g = queue_len + r in
    queue.(g mod queue_len) <- make_list g
  done;
  let sum = ref 0 in
  Array.iter (List.iter (fun v -> sum := !sum + v)) queue;
  Printf.printf "checksum: %d\n" !sum
