(* ephemerons.ml: the weak memo table workload in OCaml, the algorithm of
   ephemerons.c: 4096 buckets of cells, each holding a one-key ephemeron
   (key -> memo value) and the key's hash, a ring of 10000 live keys, lazy unlinking of the
   cells of dead keys on insert.  The ephemerons are Obj.Ephemeron's, the
   primitive layer under Ephemeron.K1 that OCaml 4.13 and 5.x both have
   (Ephemeron.K1's create/set_key/get_key were removed in 5.0), wrapped in
   typed functions below.
   Usage: ephemerons-ocaml [N]  (default 1000000) *)

type key = { id : int }
type value = { v : int }

module E = Obj.Ephemeron

(* h: the key's hash, its id, as in Ephemeron.K1.Make's buckets. *)
type bucket = Nil | Cons of { h : int; e : E.t; mutable next : bucket }

let b_count = 4096
let w = 10000

let memo_f id = id * id mod 1000003

(* The memo value of id, or -1. *)
let rec find id = function
  | Nil -> -1
  | Cons c when c.h <> id -> find id c.next
  | Cons c -> (
      match E.get_key c.e 0 with
      | Some k when (Obj.obj k : key).id = id -> (
          match E.get_data c.e with
          | Some d -> (Obj.obj d : value).v
          | None -> find id c.next)
      | _ -> find id c.next)

let rec skip_dead = function
  | Cons c when not (E.check_key c.e 0) -> skip_dead c.next
  | l -> l

let rec unlink_dead = function
  | Nil -> ()
  | Cons c ->
      let n = skip_dead c.next in
      if n != c.next then c.next <- n;
      unlink_dead n

let insert table (key : key) id v =
  let b = id mod b_count in
  let first = skip_dead table.(b) in
  if first != table.(b) then table.(b) <- first;
  unlink_dead first;
  let value = { v } in
  let e = E.create 1 in
  E.set_key e 0 (Obj.repr key);
  E.set_data e (Obj.repr value);
  table.(b) <- Cons { h = id; e; next = table.(b) }

let probes_found = ref 0

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1)
    else 1000000 in
  let ring = Array.init w (fun j -> { id = j }) in
  let table = Array.make b_count Nil in
  let x = ref 20240601 in
  let mask = (1 lsl 48) - 1 in
  let lookups = ref 0 and hits = ref 0 and sum = ref 0 in
  for i = 0 to n - 1 do
    ring.(i mod w) <- { id = w + i };
    x := (!x * 0x5DEECE66D + 0xB) land mask;
    let r = !x lsr 16 in
    if r mod 8 = 0 then begin
      let d = i - (r lsr 3) mod w in
      if d >= 0 && find d table.(d mod b_count) >= 0 then incr probes_found
    end else begin
      let k = i + 1 + (r lsr 3) mod w in
      let v = find k table.(k mod b_count) in
      incr lookups;
      let v =
        if v >= 0 then (incr hits; v)
        else begin
          let v = memo_f k in
          insert table ring.(k mod w) k v;
          v
        end
      in
      sum := !sum + v
    end
  done;
  Printf.printf "lookups: %d hits: %d\n" !lookups !hits;
  Printf.printf "checksum: %d\n" !sum
