#!/usr/bin/python3
"""Convert the shared GPU catalog into gpuctl's built-in catalog files.

    scripts/catalog-import.py [SHARED_DIR] [ROOT]

SHARED_DIR holds the source material (gpu_instances.csv, gpus.csv; default
/work/shared/catalog); ROOT is the project's top directory (default: the
one above this script).  Writes:

  ROOT/providers/NAME/catalog.csv
                        for each provider NAME of the shared table, its
                        rows: values copied verbatim, columns in gpuctl's
                        order, the long `source` citation replaced by a
                        short key into providers/NAME/sources.csv, notes
                        common to a whole source moved to that source's
                        row there; sorted by (instance_type, region).
                        Every file has the same header, so that the build
                        concatenates them (in name order) into the
                        built-in instance table.
  ROOT/catalog/gpus.csv the shared gpus.csv byte for byte, plus one row
                        for the "H-e" GPU (see H_E below).

providers/NAME/sources.csv is kept by hand; this script only checks that
every key it emits is in the sources of the row's own provider.  Output is deterministic: running it twice gives the same
bytes.  Standard library only.  Any input it does not recognise (a new
source, a new note) is an error, so that a changed input is looked at by a
person instead of being converted silently.
"""
import csv
import io
import os
import re
import sys

COLUMNS = [
    "provider", "instance_type", "region", "gpu_model", "gpu_count",
    "gpu_memory_gib", "vcpus", "memory_gib", "interconnect",
    "interconnect_gbps", "price_ondemand_usd_hr", "price_spot_usd_hr",
    "price_ondemand_cny_hr", "price_spot_cny_hr", "source", "notes",
]

# Full citation in the shared table -> short key in catalog/sources.csv.
SOURCE_KEYS = {
    "skypilot-org/skypilot-catalog catalogs/v7/aws/vms.csv @001367d2": "skypilot-v7-aws",
    "skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @00148f2a": "skypilot-v8-aws",
    "skypilot-org/skypilot-catalog catalogs/v6/azure/vms.csv @098741e7": "skypilot-v6-azure",
    "sugarlxn/skypilot-catalog catalogs/v8/alicloud/vms.csv @003c56a7": "sugarlxn-v8-alicloud",
    "ArthurChiao/arthurchiao.github.io _posts/2023-06-17-gpu-prices.md (as of 2023-06)":
        "arthurchiao-2023-06",
    "Alibaba ECS docs (ebmgn7ex family: eRDMA 160 Gbit/s); aliyun Deep-NCCL README (A100 x8)":
        "alibaba-docs",
}

# Note parts ("; "-separated) that hold for every row of a source: they live
# in that source's `notes` in sources.csv, not on each row.
COMMON_NOTES = {
    "skypilot-v7-aws": {"spot=min over AZs in region (Local Zones excluded)"},
    "skypilot-v8-aws": {"spot=min over AZs in region (Local Zones excluded)"},
    "skypilot-v6-azure": set(),
    "sugarlxn-v8-alicloud": {
        "USD = CNY x 0.138 (fetcher rate)",
        "price incl. 40GiB ESSD system disk",
        "min over zones",
    },
    "arthurchiao-2023-06": {
        "pay-as-you-go list price in CNY as of 2023-06",
        "USD = CNY x 0.138 (stated rate)",
        "no spot data",
    },
    "alibaba-docs": set(),
}

# Note parts about a GPU model rather than a row: gpus.csv carries them.
GPU_NOTES = {"A10G usable memory reported by AWS API = 22888 MiB"}

# The shared table writes the unnamed Aliyun 141GB GPU as a model with a
# remark in parentheses.  The catalog needs a model key that gpus.csv
# defines, so the key becomes "H-e" and the remark moves to the notes;
# gpus.csv gets an H-e row with the memory and no compute figures.
H_E_SHARED = "H-e(141GB; Aliyun GPUSpec, model unverified)"
H_E = "H-e"
H_E_NOTE = "GPUSpec 'H-e' 141GB; model unverified"
# Providers whose catalog.csv is kept by hand (it holds rows the shared
# table lacks); the script checks their shared rows but does not write them.
HAND_KEPT = {"aws"}
# GPU rows kept by hand after the shared ones and H-e (catalog/README.md).
HAND_GPU_ROWS = ("B200-SXM,", "B300,")

H_E_GPU_ROW = [
    H_E, "141", "", "", "", "", "", "", "", "", "", "",
    "Aliyun GPUSpec in sugarlxn/skypilot-catalog catalogs/v8/alicloud/vms.csv (gn8e; gn8ep)",
    "GPU model not named by any source; compute figures unknown",
]


def die(msg):
    sys.stderr.write("catalog-import: %s\n" % msg)
    sys.exit(1)


def convert_row(row, line):
    src = row["source"]
    if src not in SOURCE_KEYS:
        die("line %d: unknown source %r: add it to SOURCE_KEYS and sources.csv" % (line, src))
    key = SOURCE_KEYS[src]
    out = {c: row[c] for c in COLUMNS if c not in ("source", "notes")}
    out["source"] = key
    notes = []
    for part in (p.strip() for p in row["notes"].split(";")):
        if not part or part in COMMON_NOTES[key] or part in GPU_NOTES:
            continue
        notes.append(part)
    if out["gpu_model"] == H_E_SHARED:
        out["gpu_model"] = H_E
        notes.append(H_E_NOTE)
    elif "(" in out["gpu_model"]:
        die("line %d: gpu_model %r has a remark: handle it like H-e" % (line, out["gpu_model"]))
    out["notes"] = "; ".join(notes)
    for k, v in out.items():
        if v != v.strip() or "\n" in v:
            die("line %d: %s: stray white space in %r" % (line, k, v))
    return out


def csv_text(rows):
    f = io.StringIO()
    w = csv.writer(f, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    return f.getvalue()


def write(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    shared = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/catalog"
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..")
    out_dir = os.path.join(root, "catalog")

    with open(os.path.join(shared, "gpu_instances.csv"), encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = set(COLUMNS) - set(reader.fieldnames or [])
        if missing:
            die("shared gpu_instances.csv lacks columns %s" % sorted(missing))
        rows = [convert_row(r, reader.line_num) for r in reader]

    rows.sort(key=lambda r: (r["provider"], r["instance_type"], r["region"]))
    seen = set()
    for r in rows:
        k = (r["provider"], r["instance_type"], r["region"])
        if k in seen:
            die("duplicate row %s" % (k,))
        seen.add(k)

    # every provider folder's sources.csv (kept by hand), by key -> folder
    known = {}
    for name in sorted(os.listdir(os.path.join(root, "providers"))):
        path = os.path.join(root, "providers", name, "sources.csv")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", newline="") as f:
                for r in csv.DictReader(f):
                    known[r["key"]] = name
    for r in rows:
        if r["source"] not in known:
            die("source key %r is not in any providers/NAME/sources.csv" % r["source"])
        if known[r["source"]] != r["provider"]:
            die("source key %r of a %s row is in providers/%s/sources.csv"
                % (r["source"], r["provider"], known[r["source"]]))

    for provider in sorted({r["provider"] for r in rows}):
        if not re.fullmatch(r"[a-z][a-z0-9-]{0,14}", provider) or provider == "local":
            die("provider %r cannot name a folder providers/%s/ with catalog rows" % (provider, provider))
        if provider in HAND_KEPT:
            continue
        folder = os.path.join(root, "providers", provider)
        os.makedirs(folder, exist_ok=True)
        write(os.path.join(folder, "catalog.csv"),
              csv_text([COLUMNS] + [[r[c] for c in COLUMNS] for r in rows
                                    if r["provider"] == provider]))

    with open(os.path.join(shared, "gpus.csv"), encoding="utf-8", newline="") as f:
        gpus = f.read()
    if not gpus.endswith("\n"):
        die("shared gpus.csv does not end with a newline")
    if any(r[0] == H_E for r in csv.reader(io.StringIO(gpus))):
        die("shared gpus.csv already has an H-e row: drop H_E_GPU_ROW")
    with open(os.path.join(out_dir, "gpus.csv"), encoding="utf-8", newline="") as f:
        kept = "".join(l for l in f if l.startswith(HAND_GPU_ROWS))
    write(os.path.join(out_dir, "gpus.csv"), gpus + csv_text([H_E_GPU_ROW]) + kept)

    print("catalog-import: %d instance rows, %d sources" % (len(rows), len(known)))


if __name__ == "__main__":
    main()
