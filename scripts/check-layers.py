#!/usr/bin/env python3
"""Check the layering rules of docs/architecture.md; exit 1 naming each breach.

1. No code line outside providers/ and tests/ names a provider (aws, ec2,
   azure, aliyun, slurm, imds, and every folder of providers/ but the
   default provider's): comments do not count, strings do.
2. The helpers (src/helpers/) include only helper headers; the engine
   (src/engine/, include/gpuctl/) never includes a CLI header (src/cli/);
   no file outside a provider's folder includes a provider's header.
3. No source file outside tests/ is longer than MAX_LINES lines.

Usage: scripts/check-layers.py [REPO]   (default: the checkout holding it)
"""
import os
import re
import sys

MAX_LINES = 1300
# The words, plus every provider folder but the default one (whose
# name, "local", is an ordinary word of C code).
WORDS = ["aws", "ec2", "azure", "aliyun", "slurm", "imds"]


def provider_words(root):
    words = list(WORDS)
    pdir = os.path.join(root, "providers")
    for name in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
        cm = os.path.join(pdir, name, "provider.cmake")
        if not os.path.isfile(cm):
            continue
        with open(cm, encoding="utf-8") as f:
            default = re.search(r"gpuctl_provider\(\s*\S+\s+DEFAULT\b", f.read())
        if not default and name.lower() not in words:
            words.append(name.lower())
    return re.compile("|".join(re.escape(w) for w in words), re.I)
# Headers of the helper layer (include/gpuctl/NAME.h).
HELPER_HEADERS = {"buf", "clock", "error", "http", "log", "util", "xml"}
CODE_EXT = (".c", ".h")
HASH_COMMENT_EXT = (".sh", ".cmake", ".txt", ".yaml", ".py")


def strip_c(text):
    """Blank out C comments, keep strings and line numbers."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_hash(text):
    lines = []
    for line in text.split("\n"):
        s = line.lstrip()
        lines.append("" if s.startswith("#") and not s.startswith("#!") else line)
    return "\n".join(lines)


def files(root, top):
    base = os.path.join(root, top)
    if os.path.isfile(base):
        yield top
        return
    for d, _, fs in os.walk(base):
        for f in sorted(fs):
            yield os.path.relpath(os.path.join(d, f), root)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    bad = []
    NAMES = provider_words(root)
    core = ["src", "include", "cmake", "templates", "CMakeLists.txt"]
    for top in core:
        for rel in files(root, top):
            path = os.path.join(root, rel)
            if not rel.endswith(CODE_EXT + HASH_COMMENT_EXT) and "templates" not in rel:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            code = strip_c(text) if rel.endswith(CODE_EXT) else strip_hash(text)
            for no, line in enumerate(code.split("\n"), 1):
                m = NAMES.search(line)
                if m:
                    bad.append(f"{rel}:{no}: names a provider ({m.group(0)}): {line.strip()}")
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for top in ["src", "include", "providers"]:
        for rel in files(root, top):
            if not rel.endswith(CODE_EXT):
                continue
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
            for m in inc.finditer(text):
                h = m.group(1)
                no = text.count("\n", 0, m.start()) + 1
                helper = rel.startswith("src/helpers/") or (
                    rel.startswith("include/gpuctl/")
                    and os.path.splitext(os.path.basename(rel))[0] in HELPER_HEADERS)
                engine = rel.startswith(("src/engine/", "include/")) or rel.startswith("providers/")
                private = "/" not in h and os.path.exists(os.path.join(root, "src/helpers", h))
                if helper and not private and not (h.startswith("gpuctl/")
                                                   and os.path.splitext(os.path.basename(h))[0]
                                                   in HELPER_HEADERS):
                    bad.append(f"{rel}:{no}: a helper includes {h}, which is not a helper header")
                elif engine and not h.startswith("gpuctl/") and "/" not in h and \
                        os.path.exists(os.path.join(root, "src/cli", h)):
                    bad.append(f"{rel}:{no}: the engine includes the CLI header {h}")
                own = rel.split("/")[1] if rel.startswith("providers/") else None
                if "/" in h and not h.startswith(("gpuctl/", "cjson/", "openssl/", "libxml/",
                                                  "curl/", "sys/", "netinet/", "arpa/")):
                    folder = h.split("/")[0]
                    if os.path.isdir(os.path.join(root, "providers", folder)) and folder != own:
                        bad.append(f"{rel}:{no}: includes {h} of providers/{folder}/")
    for top in ["src", "include", "providers"]:
        for rel in files(root, top):
            if not rel.endswith(CODE_EXT):
                continue
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                bad.append(f"{rel}: {n} lines, more than {MAX_LINES}")
    for b in bad:
        print(b)
    if bad:
        print(f"check-layers: {len(bad)} breach(es) of docs/architecture.md", file=sys.stderr)
        return 1
    print("check-layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
