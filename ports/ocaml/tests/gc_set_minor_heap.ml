(* The port's own regression test: Gc.set resizing the minor heap, past the
   size reserved at start-up (mgc then moves every minor heap).  The port
   used to keep the old bounds: Is_young and the remembered set went wrong
   (the heap verifier, MGC_PARAMS=V=1, reported young values in old blocks
   not remembered) and Gc.get reported the old size. *)
let () =
  let r = ref [] in
  for i = 1 to 5 do
    Gc.set { (Gc.get ()) with Gc.minor_heap_size = 32768 * i * i };
    for j = 1 to 100000 do r := (i, j) :: !r; if j mod 1000 = 0 then r := [] done;
    Printf.printf "%d %d %b\n" i (Gc.get ()).Gc.minor_heap_size
      (Obj.is_block (Obj.repr !r))
  done

let () =
  let keep = ref [] and r = ref [] in
  for i = 1 to 5 do
    Gc.set { (Gc.get ()) with Gc.minor_heap_size = 32768 * i * i };
    for j = 1 to 100000 do
      r := (i, j) :: !r;
      if j mod 1000 = 0 then r := [];
      if j mod 10007 = 0 then keep := (i, j, string_of_int j) :: !keep
    done;
    Printf.printf "%d %d\n" i (Gc.get ()).Gc.minor_heap_size
  done;
  (* Old blocks pointing to young ones across a shrink. *)
  let a = Array.make 1000 (0, "") in
  Gc.full_major ();
  Gc.set { (Gc.get ()) with Gc.minor_heap_size = 4096 };
  Array.iteri (fun i _ -> a.(i) <- (i, string_of_int i)) a;
  Gc.minor ();
  Gc.full_major ();
  let ok = ref true in
  Array.iteri (fun i (j, s) -> if i <> j || s <> string_of_int i then ok := false) a;
  Printf.printf "%b %d %s\n" !ok (List.length !keep)
    (String.concat "," (List.map (fun (_, _, s) -> s) !keep))

let () =
  Gc.set { (Gc.get ()) with Gc.minor_heap_size = 4096 };
  let a = Array.init 1000 (fun i -> string_of_int i) in
  Gc.full_major ();
  print_endline a.(999)
