#!/usr/bin/python3
"""Write a copy of the instance catalog scaled to a given number of rows.

    bench/scale_catalog.py ROWS OUT.csv [SOURCE.csv]

SOURCE defaults to the built-in instance table: providers/*/catalog.csv
next to this script, concatenated by folder name as the build does.  The
output has the source's header and exactly ROWS data rows: copy 0 is the
source's rows unchanged, copy k (k >= 1) is the same rows with "-rNNNN"
appended to the region (us-east-1 -> us-east-1-r0001), so every row stays a
realistic offer and (provider, instance_type, region) stays unique.  The last
copy is cut short to hit ROWS exactly.  Rows are sorted by (provider,
instance_type, region) like the built-in file.

bench/catalog.sh asks for 1,000, 25,000 (about AWS's instance types across
all its regions, the largest catalog a user has) and 50,000 rows (to show
that the cost grows linearly).

Deterministic (same arguments, same bytes) and standard library only.  The
output is benchmark input: write it to a temp dir, never commit it.
"""
import csv
import glob
import io
import os
import sys


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    try:
        rows = int(argv[1])
    except ValueError:
        rows = -1
    if rows < 1:
        sys.stderr.write("scale_catalog.py: ROWS must be a positive integer\n")
        return 2
    out_path = argv[2]
    if len(argv) == 4:
        src = argv[3]
        with open(src, newline="", encoding="utf-8") as f:
            table = list(csv.reader(f))
    else:
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "providers",
                           "*", "catalog.csv")
        table = []
        for path in sorted(glob.glob(src)):
            with open(path, newline="", encoding="utf-8") as f:
                part = list(csv.reader(f))
            table += part if not table else part[1:]
    header, body = table[0], [r for r in table[1:] if r]
    if not body:
        sys.stderr.write("scale_catalog.py: %s has no rows\n" % src)
        return 1
    try:
        ip, it, ir = header.index("provider"), header.index("instance_type"), header.index("region")
    except ValueError as e:
        sys.stderr.write("scale_catalog.py: %s: %s\n" % (src, e))
        return 1
    copies = (rows + len(body) - 1) // len(body)
    if copies > 10000:
        sys.stderr.write("scale_catalog.py: at most %d rows from this source\n" % (10000 * len(body)))
        return 2

    out = []
    for k in range(copies):
        for r in body:
            if len(out) == rows:
                break
            if k:
                r = list(r)
                r[ir] = "%s-r%04d" % (r[ir], k)
            out.append(r)
    out.sort(key=lambda r: (r[ip], r[it], r[ir]))

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(out)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
