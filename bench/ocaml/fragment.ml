(* fragment.ml: the fragmentation and compaction workload in OCaml, the
   algorithm of fragment.c.  A block is built with Obj.new_block (tag 0, s
   fields: the id, the link, the integers id + j for 2 <= j < s), the
   layout of mgc's blocks; the array holds Obj.t, an emptied slot the
   integer 0.  Gc.full_major, then Gc.compact timed with Unix.gettimeofday
   (wall time; in OCaml 4.13 and 5.x alike Gc.compact runs a full major
   cycle, then compacts); heap words from Gc.quick_stat, RSS from
   /proc/self/status.
   Usage: fragment-ocaml [N]  (default 2000000) *)

let rounds = 5

let x = ref 20240601
let mask = (1 lsl 48) - 1

let next () =
  x := (!x * 0x5DEECE66D + 0xB) land mask;
  !x lsr 16

let size_of r = if r mod 4 <> 0 then 2 + (r / 4) mod 6 else 8 + (r / 4) mod 57

(* VmRSS of /proc/self/status in KiB, -1 when unreadable. *)
let rss_kib () =
  match open_in "/proc/self/status" with
  | exception Sys_error _ -> -1
  | ic ->
      let rec loop () =
        match input_line ic with
        | exception End_of_file -> -1
        | l ->
            if String.length l > 6 && String.sub l 0 6 = "VmRSS:" then
              Scanf.sscanf (String.sub l 6 (String.length l - 6)) " %d" Fun.id
            else loop ()
      in
      let v = loop () in
      close_in ic;
      v

let empty = Obj.repr 0
let is_empty (v : Obj.t) = Obj.is_int v

(* A fresh block of id d, s fields, linked to link. *)
let make_block d s link =
  let b = Obj.new_block 0 s in
  Obj.set_field b 0 (Obj.repr d);
  Obj.set_field b 1 link;
  for j = 2 to s - 1 do
    Obj.set_field b j (Obj.repr (d + j))
  done;
  b

let id (b : Obj.t) : int = Obj.obj (Obj.field b 0)

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 2000000 in
  let arr = Array.make n empty in
  let kept = ref 0 and kept_words = ref 0 and fresh = ref 0 and sum = ref 0 in
  (* 1. Build. *)
  let is_kept = Bytes.make n '\000' in
  for i = 0 to n - 1 do
    let s = size_of (next ()) in
    let k = next () mod 10 = 0 || i = 0 in
    if k then Bytes.unsafe_set is_kept i '\001';
    let t = ref (next () mod (i + 1)) in
    while Bytes.unsafe_get is_kept !t = '\000' do decr t done;
    let b = make_block i s (if !t = i then empty else arr.(!t)) in
    if !t = i then Obj.set_field b 1 b;
    arr.(i) <- b;
    if k then begin
      incr kept;
      kept_words := !kept_words + s + 1
    end
  done;
  (* 2. Drop. *)
  for i = 0 to n - 1 do
    if Bytes.unsafe_get is_kept i = '\000' then arr.(i) <- empty
  done;
  (* 3. Collect, measure, compact, measure. *)
  Gc.full_major ();
  let heap_before = (Gc.quick_stat ()).Gc.heap_words in
  let rss_before = rss_kib () in
  let t0 = Unix.gettimeofday () in
  Gc.compact ();
  let t1 = Unix.gettimeofday () in
  let heap_after = (Gc.quick_stat ()).Gc.heap_words in
  let rss_after = rss_kib () in
  (* 4. Rounds of replacement over the kept slots. *)
  for _ = 1 to rounds do
    for i = 0 to n - 1 do
      if not (is_empty arr.(i)) && next () mod 10 = 0 then begin
        let s = size_of (next ()) in
        let t = ref (next () mod n) in
        while is_empty arr.(!t) do decr t done;
        arr.(i) <- make_block (n + !fresh) s arr.(!t);
        incr fresh
      end
    done
  done;
  (* 5. Checksum. *)
  for i = 0 to n - 1 do
    let c = arr.(i) in
    if not (is_empty c) then begin
      let l = Obj.field c 1 in
      sum := !sum + id c + 2 * id l + 3 * id (Obj.field l 1);
      for j = 2 to Obj.size c - 1 do
        sum := !sum + (Obj.obj (Obj.field c j) : int)
      done
    end
  done;
  Printf.printf "blocks: %d kept: %d kept_words: %d\n" n !kept !kept_words;
  Printf.printf "replaced: %d\n" !fresh;
  Printf.printf "checksum: %d\n" !sum;
  flush stdout;
  Printf.eprintf
    "fragment: heap_words_before=%d rss_kib_before=%d heap_words_after=%d \
     rss_kib_after=%d compact_ms=%.3f\n"
    heap_before rss_before heap_after rss_after ((t1 -. t0) *. 1000.)
