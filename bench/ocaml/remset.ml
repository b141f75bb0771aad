(* remset.ml: the write-barrier workload in OCaml: an old array of cells,
   each round storing a fresh cell into a pseudo-random slot.
   Usage: remset-ocaml [ROUNDS]  (default 10000000) *)

type cell = { a : int; b : int }

let slots = 1000000

let () =
  let rounds = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 10000000 in
  let empty = { a = 0; b = 0 } in
  let array = Array.make slots empty in
  (* The array is far above Max_young_wosize: it is in the major heap. *)
  let x = ref 20240601 in
  let mask = (1 lsl 48) - 1 in
  for r = 1 to rounds do
    x := (!x * 0x5DEECE66D + 0xB) land mask;
    let i = (!x lsr 16) mod slots in
    array.(i) <- { a = r; b = i }
  done;
  let filled = ref 0 and sum_a = ref 0 and sum_b = ref 0 in
  Array.iter (fun c ->
      if c.a <> 0 then incr filled;
      sum_a := !sum_a + c.a;
      sum_b := !sum_b + c.b) array;
  Printf.printf "filled slots: %d\n" !filled;
  Printf.printf "sum of a: %d\n" !sum_a;
  Printf.printf "sum of b: %d\n" !sum_b;
  Printf.printf "checksum: %d\n" (!sum_a + 3 * !sum_b + !filled)
