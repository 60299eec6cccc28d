#!/usr/bin/env python3
"""accuracy_tables.py: the markdown tables of docs/accuracy.md from the tsv
files that scripts/accuracy.sh writes into build/accuracy/.

Every tsv line: label, protocol, method, n1, n2, then four rates:
  protocol all / fvc: genuine, impostors, EER, FMR100, FMR1000, FMRzero
  protocol ident:     mated, non-mated, FNIR@FPIR=0, FNIR@FPIR=1%, rank-1, EER
"""
import collections
import os
import statistics
import sys

DBS = ["DB1_B", "DB2_B", "DB3_B", "DB4_B"]
ENCS = ["mindtct", "fjfx", "secugen", "minex"]
ENC_NAMES = {
    "mindtct": "NBIS mindtct xyt",
    "fjfx": "FingerJetFX ISO",
    "secugen": "SecuGen ISO (300x400 frame)",
    "minex": "NBIS-MINEX ANSI 378",
}
METHODS = ["lss", "lss-r", "lss-dtr", "lsa", "lsa-r", "lsa-dtr", "lgs", "lgs-r",
           "lgs-dtr", "consolidation", "fused"]
# bozorth3 EER of shared/data/README.md: all pairs, FVC protocol
BOZORTH3 = {
    "DB1_B": {"mindtct": (4.2, 5.7), "fjfx": (7.8, 8.0), "secugen": (11.3, 12.9), "minex": (16.1, 19.3)},
    "DB2_B": {"mindtct": (2.6, 4.0), "fjfx": (7.2, 6.9), "secugen": (9.3, 9.4), "minex": (10.0, 11.1)},
    "DB3_B": {"mindtct": (9.0, 9.1), "fjfx": (22.9, 23.1), "secugen": (18.6, 20.0), "minex": (19.0, 18.7)},
    "DB4_B": {"mindtct": (5.4, 4.7), "fjfx": (5.6, 4.4), "secugen": (5.7, 5.1), "minex": (12.8, 9.8)},
}


def load(path):
    """rows[label][protocol][method] = (n1, n2, r1, r2, r3, r4), rates in %."""
    rows = collections.defaultdict(lambda: collections.defaultdict(dict))
    if not os.path.exists(path):
        return rows
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        rows[f[0]][f[1]][f[2]] = (int(f[3]), int(f[4])) + tuple(100 * float(x) for x in f[5:9])
    return rows


def pct(x):
    return "%.2f" % x


def fvc_tables(out):
    rows = load(os.path.join(out, "fvc.tsv"))
    if not rows:
        return
    print("### FVC2002 set B, all pairs (280 genuine, 2,880 impostor pairs per set)\n")
    print("Each cell: EER / FMR100 / FMR1000 in %. bozorth3: the EER of "
          "`shared/data/README.md` (its FMR100 and FMR1000 from its scores where we have "
          "them: mindtct).\n")
    for db in DBS:
        print("#### %s\n" % db)
        print("| method | " + " | ".join(ENC_NAMES[e] for e in ENCS) + " |")
        print("|---|" + "---|" * len(ENCS))
        for m in METHODS:
            cells = []
            for e in ENCS:
                r = rows.get("%s:%s" % (db, e), {}).get("all", {}).get(m)
                cells.append("%s / %s / %s" % (pct(r[2]), pct(r[3]), pct(r[4])) if r else "-")
            print("| %s | %s |" % (m, " | ".join(cells)))
        cells = []
        for e in ENCS:
            r = rows.get("%s:%s" % (db, e), {}).get("all", {}).get("bozorth3")
            if r:
                cells.append("%s / %s / %s" % (pct(r[2]), pct(r[3]), pct(r[4])))
            else:
                cells.append("%.1f / - / -" % BOZORTH3[db][e][0])
        print("| bozorth3 | %s |" % " | ".join(cells))
        print()

    print("### Summary over the 16 sets (all pairs)\n")
    print("Mean EER, FMR100 and FMR1000 in %; ratio: bozorth3's EER over the method's, "
          "median over the 16 sets, and the number of sets where the method's EER is at "
          "least 2x lower.\n")
    print("| method | mean EER | mean FMR100 | mean FMR1000 | EER ratio to bozorth3 (median) | sets >= 2x |")
    print("|---|---|---|---|---|---|")
    for m in METHODS:
        eers, f100, f1000, ratios = [], [], [], []
        for db in DBS:
            for e in ENCS:
                r = rows.get("%s:%s" % (db, e), {}).get("all", {}).get(m)
                if not r:
                    continue
                eers.append(r[2])
                f100.append(r[3])
                f1000.append(r[4])
                ratios.append(BOZORTH3[db][e][0] / r[2] if r[2] > 0 else float("inf"))
        if not eers:
            continue
        print("| %s | %s | %s | %s | %.2f | %d of %d |" % (
            m, pct(statistics.mean(eers)), pct(statistics.mean(f100)),
            pct(statistics.mean(f1000)), statistics.median(ratios),
            sum(1 for x in ratios if x >= 2), len(ratios)))
    b = [BOZORTH3[db][e][0] for db in DBS for e in ENCS]
    print("| bozorth3 | %s | | | 1 | |" % pct(statistics.mean(b)))
    print()

    print("### FVC protocol (280 genuine, 45 impostor pairs per set)\n")
    print("EER in %, mean over the four encodings of each database (45 impostor pairs "
          "give FMR steps of 2.2 %).\n")
    print("| method | " + " | ".join(DBS) + " |")
    print("|---|" + "---|" * len(DBS))
    for m in METHODS:
        cells = []
        for db in DBS:
            v = [rows["%s:%s" % (db, e)]["fvc"][m][2] for e in ENCS
                 if m in rows.get("%s:%s" % (db, e), {}).get("fvc", {})]
            cells.append(pct(statistics.mean(v)) if v else "-")
        print("| %s | %s |" % (m, " | ".join(cells)))
    print("| bozorth3 | %s |" % " | ".join(
        pct(statistics.mean(BOZORTH3[db][e][1] for e in ENCS)) for db in DBS))
    print()

    un = load(os.path.join(out, "fvc-unstretched.tsv"))
    if un:
        print("### SecuGen records: stretched frame as imported vs mapped back\n")
        print("EER in % (all pairs).\n")
        print("| method | " + " | ".join("%s as imported | %s mapped back" % (db, db) for db in DBS) + " |")
        print("|---|" + "---|---|" * len(DBS))
        for m in METHODS:
            cells = []
            for db in DBS:
                a = rows.get("%s:secugen" % db, {}).get("all", {}).get(m)
                u = un.get("%s:secugen-unstretched" % db, {}).get("all", {}).get(m)
                cells += [pct(a[2]) if a else "-", pct(u[2]) if u else "-"]
            print("| %s | %s |" % (m, " | ".join(cells)))
        print()


def mean_eer(path, method):
    rows = load(path)
    v = [rows[l]["all"][method][2] for l in rows if method in rows[l].get("all", {})]
    return (statistics.mean(v), len(v)) if v else (None, 0)


def settle_tables(out):
    if not os.path.exists(os.path.join(out, "settle-dtr-sum.tsv")):
        return
    print("### DTR normaliser\n")
    print("Mean EER in % over the 16 FVC2002 sets (all pairs), and the EER on synthetic "
          "fingers (100 x 8, all pairs).\n")
    print("| method | sum: FVC2002 | mean: FVC2002 | sum: synthetic | mean: synthetic |")
    print("|---|---|---|---|---|")
    for m in ["lss-dtr", "lsa-dtr", "lgs-dtr"]:
        c = []
        for f in ["settle-dtr-sum.tsv", "settle-dtr-mean.tsv"]:
            c.append(pct(mean_eer(os.path.join(out, f), m)[0]))
        for f in ["settle-synth-dtr-sum.tsv", "settle-synth-dtr-mean.tsv"]:
            v = mean_eer(os.path.join(out, f), m)[0]
            c.append(pct(v) if v is not None else "-")
        print("| %s | %s |" % (m, " | ".join(c)))
    print()
    print("### Consolidation score\n")
    print("| score | FVC2002 mean EER | FVC2002 mean FMR100 | synthetic EER | synthetic FMR100 |")
    print("|---|---|---|---|---|")
    for cs in ["count", "sim", "count-lss"]:
        rows = load(os.path.join(out, "settle-cons-%s.tsv" % cs))
        e = [rows[l]["all"]["consolidation"][2] for l in rows]
        f = [rows[l]["all"]["consolidation"][3] for l in rows]
        srows = load(os.path.join(out, "settle-synth-cons-%s.tsv" % cs))
        s = srows.get("synth", {}).get("all", {}).get("consolidation")
        print("| %s | %s | %s | %s | %s |" % (cs, pct(statistics.mean(e)), pct(statistics.mean(f)),
                                             pct(s[2]) if s else "-", pct(s[3]) if s else "-"))
    print()
    print("Consolidation (summed similarity), mean EER over the 16 FVC2002 sets by t_s:\n")
    print("| t_s | mean EER |")
    print("|---|---|")
    for ts, f in [(8, "settle-cons-ts8.tsv"), (12, "settle-cons-sim.tsv"),
                  (16, "settle-cons-ts16.tsv"), (20, "settle-cons-ts20.tsv")]:
        v = mean_eer(os.path.join(out, f), "consolidation")[0]
        print("| %d px | %s |" % (ts, pct(v) if v is not None else "-"))
    print()


def selection_table(out):
    rows32 = load(os.path.join(out, "settle-cons-sim.tsv"))
    rows_all = load(os.path.join(out, "settle-cons-all.tsv"))
    if not rows_all:
        return
    print("### Consolidation: the 32 cylinders of paper 001 against every cylinder\n")
    print("EER in % (all pairs), mean over the four databases.\n")
    print("| encoding | 32 cylinders (paper 001) | every cylinder |")
    print("|---|---|---|")
    for e in ENCS:
        a = [rows32["%s:%s" % (db, e)]["all"]["consolidation"][2] for db in DBS
             if "%s:%s" % (db, e) in rows32]
        b = [rows_all["%s:%s" % (db, e)]["all"]["consolidation"][2] for db in DBS
             if "%s:%s" % (db, e) in rows_all]
        if a and b:
            print("| %s | %s | %s |" % (ENC_NAMES[e], pct(statistics.mean(a)), pct(statistics.mean(b))))
    print()


def method_rows(r0):
    """The rows of a synthetic table: each method of r0, its columns 2..5 as percentages."""
    for m in METHODS:
        r = r0.get(m)
        if r:
            print("| %s | %s | %s | %s | %s |" % (m, pct(r[2]), pct(r[3]), pct(r[4]), pct(r[5])))
    print()


def synth_tables(out):
    rows = load(os.path.join(out, "synth-ident.tsv"))
    rows.update(load(os.path.join(out, "synth-hard-ident.tsv")))
    for label in rows:
        r0 = rows[label]["ident"]
        m0 = next(iter(r0.values()))
        print("### Synthetic identification, %s (%d mated and %d non-mated probes)\n" % (label, m0[0], m0[1]))
        print("| method | FNIR at FPIR = 0 | FNIR at FPIR = 1 % | rank-1 | EER (FNIR = FPIR) |")
        print("|---|---|---|---|---|")
        method_rows(r0)
    rows = load(os.path.join(out, "synth-fvc.tsv"))
    for label in rows:
        r0 = rows[label]["all"]
        m0 = next(iter(r0.values()))
        print("### Synthetic fingers, all pairs (%d genuine, %d impostor)\n" % (m0[0], m0[1]))
        print("| method | EER | FMR100 | FMR1000 | FMRzero |")
        print("|---|---|---|---|---|")
        method_rows(r0)


def extract_tables(out):
    """Section 11: our minutiae (mccextract) against mindtct's and FingerJetFX's."""
    rows = load(os.path.join(out, "extract.tsv"))
    if not rows:
        return
    cols = [("ours", "ours"), ("ours-500dpi", "ours at 500 dpi"), ("mindtct", "NBIS mindtct"),
            ("fjfx", "FingerJetFX")]
    print("### Our minutiae against mindtct's and FingerJetFX's (all pairs)\n")
    print("Each cell: EER / FMR100 / FMR1000 in %; ratio: our EER over mindtct's "
          "with the same method (target: at most 1.5).\n")
    worst = {}
    for db in DBS:
        have = [(k, n) for k, n in cols if "%s:%s" % (db, k) in rows]
        print("#### %s\n" % db)
        print("| method | " + " | ".join(n for _, n in have) + " | ratio |")
        print("|---|" + "---|" * (len(have) + 1))
        for m in METHODS:
            cells = []
            for k, _ in have:
                r = rows["%s:%s" % (db, k)]["all"].get(m)
                cells.append("%s / %s / %s" % (pct(r[2]), pct(r[3]), pct(r[4])) if r else "-")
            ours = rows["%s:ours" % db]["all"].get(m)
            ref = rows["%s:mindtct" % db]["all"].get(m)
            ratio = ours[2] / ref[2] if ours and ref and ref[2] > 0 else float("nan")
            worst[m] = max(worst.get(m, 0), ratio)
            print("| %s | %s | %.2f |" % (m, " | ".join(cells), ratio))
        print()
    print("Worst ratio over the four databases: " +
          ", ".join("%s %.2f" % (m, worst[m]) for m in METHODS if m in worst) + "\n")


def sweep_table(out):
    """Section 11: extraction parameters, one changed at a time."""
    rows = load(os.path.join(out, "extract-sweep.tsv"))
    if not rows:
        return
    labels = []
    for key in rows:
        lab = key.rsplit(":", 1)[0]
        if lab not in labels:
            labels.append(lab)
    print("### Extraction parameters, one changed at a time (EER in %, all pairs)\n")
    print("Each cell: lss / lss-r / lss-dtr.\n")
    print("| variant | " + " | ".join(DBS) + " | mean lss-r |")
    print("|---|" + "---|" * (len(DBS) + 1))
    for lab in labels:
        cells = []
        lr = []
        for db in DBS:
            r = rows.get("%s:%s" % (lab, db), {}).get("all", {})
            if all(m in r for m in ("lss", "lss-r", "lss-dtr")):
                cells.append("%s / %s / %s" % tuple(pct(r[m][2]) for m in ("lss", "lss-r", "lss-dtr")))
                lr.append(r["lss-r"][2])
            else:
                cells.append("-")
        print("| %s | %s | %s |" % (lab, " | ".join(cells), pct(statistics.mean(lr)) if lr else "-"))
    print()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/accuracy"
    fvc_tables(out)
    settle_tables(out)
    selection_table(out)
    synth_tables(out)
    extract_tables(out)
    sweep_table(out)


if __name__ == "__main__":
    main()
