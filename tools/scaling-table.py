#!/usr/bin/env python3
"""scaling-table.py RESULTS.json: the table of tools/scaling.sh.

RESULTS.json is bench/harness.c's output for mt-binarytrees at several
domain counts D.  Prints, per D: each implementation's median wall time and
its speed-up over its own run at the smallest D; mgc's time over OCaml's as
the median (and range) of the ratios of runs in the same round; mgc's minor
pause p50 / p99 / max (the run nearest the median) and its peak RSS beside
OCaml's.  Exits 1 if any run failed its checks."""
import json
import statistics
import sys


def main():
    with open(sys.argv[1]) as f:
        res = json.load(f)
    m = res["machine"]
    print(f"machine: {m['cpu']}, {m['cores']} cores; {res['runs']} rounds per D;"
          f" {m['stalls_over_1ms']} stalls over 1 ms in {m['stall_probe_s']} s"
          f" (longest {m['stall_max_ms']:.2f} ms)")
    rows = []
    for w in res["workloads"]:
        if w["program"] != "mt-binarytrees":
            continue
        depth, d = (int(x) for x in w["args"].split())
        rows.append((d, depth, {i["name"]: i for i in w["implementations"]}))
    rows.sort(key=lambda r: r[0])
    if not rows:
        sys.exit("no mt-binarytrees workload in " + sys.argv[1])
    names = list(rows[0][2])
    ocaml = next((n for n in names if n.startswith("ocaml")), None)
    base = rows[0][2]
    failed = False
    head = f"{'D':>3}"
    for n in names:
        head += f" {n + ' s':>12} {'x' + str(rows[0][0]):>5}"
    if ocaml:
        head += f"  {'mgc/' + ocaml:>22}"
    head += f"  {'mgc minor p50/p99/max us':>26}"
    if ocaml:
        head += f"  {'RSS mgc/ocaml MiB':>17}"
    print(f"mt-binarytrees {rows[0][1]}, wall time medians; xN: speed-up over"
          f" the same implementation at D={rows[0][0]}")
    print(head)
    for d, _, impls in rows:
        line = f"{d:>3}"
        for n in names:
            i = impls.get(n)
            if i is None or not i["ok"]:
                failed = True
                line += f" {'failed':>12} {'':>5}"
                continue
            up = base[n]["median_wall_s"] / i["median_wall_s"]
            line += f" {i['median_wall_s']:>12.3f} {up:>5.2f}"
        if ocaml and impls["mgc"]["ok"] and impls[ocaml]["ok"]:
            r = [a / b for a, b in zip(impls["mgc"]["wall_s"],
                                       impls[ocaml]["wall_s"])]
            line += (f"  {statistics.median(r):>8.3f} ({min(r):.2f}-"
                     f"{max(r):.2f})")
        s = impls["mgc"].get("mgc_stats", {})
        if all(k in s for k in ("minor_pause_p50_us", "minor_pause_p99_us",
                                "minor_pause_max_us")):
            line += (f"  {s['minor_pause_p50_us']:>7.0f} /"
                     f" {s['minor_pause_p99_us']:>6.0f} /"
                     f" {s['minor_pause_max_us']:>6.0f}")
        if ocaml:
            line += (f"  {impls['mgc']['peak_rss_mib']:>8.1f} /"
                     f" {impls[ocaml]['peak_rss_mib']:.1f}")
        print(line)
    sys.exit(1 if failed else 0)


main()
