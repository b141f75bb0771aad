(* The port's own test: a major allocation that the OS refuses raises
   Out_of_memory and loses nothing (the glue asks mgc for memory with
   mgc_alloc_shr_noexc and raises outside mgc). *)
let () =
  (try ignore (Array.make (1 lsl 36) 0); print_endline "allocated?"
   with Out_of_memory -> print_endline "Out_of_memory");
  (try ignore (Bytes.create (1 lsl 40)); print_endline "allocated?"
   with Out_of_memory -> print_endline "Out_of_memory");
  print_endline "still alive"
