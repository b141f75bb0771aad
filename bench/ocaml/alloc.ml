(* alloc.ml: the allocation workload in OCaml: three-field blocks in pairs
   (the second points to the first), dead at once; M / 4 blocks (three
   fields and a header), as in alloc.c.
   Usage: alloc-ocaml [M]  (default 1000000000) *)

type block = Nil | Block of block * int * int

let () =
  let words = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 1000000000 in
  let blocks = words / 4 in
  let last = ref Nil and n = ref 0 in
  for i = 0 to blocks - 1 do
    let v = Block (!last, i, 0) in
    match !last with
    | Nil -> last := v
    | Block _ -> n := !n + 2; last := Nil
  done;
  (match !last with Nil -> () | Block _ -> incr n);
  Printf.printf "blocks: %d\n" !n;
  Printf.printf "checksum: %d\n" !n
