#!/bin/bash
# `cmake --install` from the build directory (GPUCTL_BIN's) into a
# temporary prefix: a working binary, the man page, and bash and zsh
# completions written from gpuctl's own command and option tables, so that
# the bash one completes what the parser accepts.
source "$(dirname "$0")/lib.sh" || exit 1

BUILD=$(dirname "$GPUCTL_BIN")
P="$T/prefix"
run_rc rc cmake --install "$BUILD" --prefix "$P" > "$T/install.txt" 2>&1
expect_eq "cmake --install into a prefix: exit 0" 0 "$rc"
expect_eq "what it installs, the reference docs aside" \
    "bin/gpuctl share/bash-completion/completions/gpuctl share/doc/gpuctl/copyright share/man/man1/gpuctl.1 share/zsh/site-functions/_gpuctl" \
    "$(cd "$P" && find . -type f | sed 's|^\./||' | grep -v '^share/doc/gpuctl/docs/' | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the licence is the copyright file" "" "$(cmp "$P/share/doc/gpuctl/copyright" "$GPUCTL_SOURCE_DIR/LICENSE" 2>&1)"
expect_eq "every page the man page points to is installed" \
    "$(cd "$GPUCTL_SOURCE_DIR/docs" && find . -name '*.md' | sort | tr '\n' ' ')" \
    "$(cd "$P/share/doc/gpuctl/docs" && find . -name '*.md' | sort | tr '\n' ' ')"

# The installed binary works.
run_rc rc "$P/bin/gpuctl" --version > "$T/v.txt"
expect_eq "installed gpuctl --version: exit 0, as the built one" "0 $("$GPUCTL_BIN" version)" "$rc $(cat "$T/v.txt")"
mkdir -p "$T/work" && cp "$GPUCTL_SOURCE_DIR/examples/quickstart.yaml" "$GPUCTL_SOURCE_DIR/examples/train_ddp.py" "$T/work"
run_rc rc "$P/bin/gpuctl" --state-dir "$STATE" apply -f "$T/work/quickstart.yaml" --dry-run > "$T/dry.txt"
expect_eq "installed gpuctl plans the quickstart" \
    "0 cluster quickstart: would create 2 node(s) (dry run, nothing changed)" "$rc $(cat "$T/dry.txt")"

# The man page is docs/gpuctl.1 and renders.
expect_eq "man page installed as docs/gpuctl.1" "" "$(cmp "$P/share/man/man1/gpuctl.1" "$GPUCTL_SOURCE_DIR/docs/gpuctl.1" 2>&1)"
if command -v man > /dev/null; then  # man-db is not a build dependency
    # In the C locale groff writes ASCII; in a UTF-8 one, where groff's site
    # macros differ between machines, a '-' may come out as U+2010 or U+2212
    # (CI's fresh Debian 12 did): both are folded to '-' before matching.
    run_rc rc sh -c "LC_ALL=C MANWIDTH=80 man -l '$P/share/man/man1/gpuctl.1' > '$T/man.txt' 2> '$T/man.err'"
    expect_eq "man -l renders it" 0 "$rc"
    expect_match "with its name" "gpuctl - run multi-node GPU training jobs from a YAML job spec" \
        "$(LC_ALL=C sed 's/\xe2\x80\x90/-/g; s/\xe2\x88\x92/-/g' "$T/man.txt")"
fi

# The completions are what `gpuctl completion bash|zsh` prints.
BASH_C="$P/share/bash-completion/completions/gpuctl"
ZSH_C="$P/share/zsh/site-functions/_gpuctl"
expect_eq "bash completion is gpuctl's" "$("$GPUCTL_BIN" completion bash)" "$(cat "$BASH_C")"
expect_eq "zsh completion is gpuctl's" "$("$GPUCTL_BIN" completion zsh)" "$(cat "$ZSH_C")"
expect_eq "zsh completion declares itself for compinit" "#compdef gpuctl" "$(head -1 "$ZSH_C")"
if command -v zsh > /dev/null; then
    run_rc rc zsh -n "$ZSH_C"
    expect_eq "zsh -n accepts the zsh completion" 0 "$rc"
fi
run_rc rc "$GPUCTL_BIN" completion fish 2> "$T/e.txt"
expect_eq "completion of another shell: exit 3" \
    "3 gpuctl: error: no completion for shell 'fish' (bash or zsh) (usage: gpuctl completion bash|zsh)" "$rc $(cat "$T/e.txt")"
expect_eq "completion is not listed in help" "" "$("$GPUCTL_BIN" help | grep completion || true)"

# complete WORD...: what bash completes for the last word (one per line).
complete_words() {
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpuctl; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$BASH_C" "$@"
}
run_rc rc bash -c "source '$BASH_C' && complete -p gpuctl" > "$T/complete.txt"
expect_eq "bash completion registers itself" "0 complete -F _gpuctl gpuctl" "$rc $(cat "$T/complete.txt")"
expect_eq "gpuctl pl<TAB>: plan" "plan" "$(complete_words gpuctl pl)"
expect_match "gpuctl plan --d<TAB>: --detailed-exitcode" "^--detailed-exitcode$" "$(complete_words gpuctl plan --d)"
expect_eq "gpuctl plan --d<TAB>: and the global --debug, nothing else" "--debug --detailed-exitcode" \
    "$(complete_words gpuctl plan --d | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "gpuctl -o <TAB>: the formats" "table json" "$(complete_words gpuctl -o '' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "after a global option's value, the command" "status" "$(complete_words gpuctl --state-dir /tmp st)"
expect_eq "gpuctl offers --sort <TAB>: its values" "price price-per-tflops" \
    "$(complete_words gpuctl offers --sort '' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "gpuctl catalog <TAB>: its subcommands" "show export update reset" \
    "$(complete_words gpuctl catalog '' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "gpuctl data <TAB>: its actions" "push ls pull rm" \
    "$(complete_words gpuctl data '' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "gpuctl check <TAB>: the providers built in" "$("$GPUCTL_BIN" -o json version | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["providers"]))')" \
    "$(complete_words gpuctl check '' | tr '\n' ' ' | sed 's/ $//')"
expect_eq "gpuctl validate <TAB>: files" "$T/work/quickstart.yaml" "$(complete_words gpuctl validate "$T/work/quick")"
expect_eq "gpuctl get --a<TAB>: an alias completes as its command" "--all" "$(complete_words gpuctl get --a)"

# Every command completes exactly the options its -h explains.
for c in validate offers plan apply status logs destroy render catalog data check version; do
    expect_eq "$c: completion and -h list the same options" \
        "$("$GPUCTL_BIN" "$c" -h | grep -oE '^  (-[a-z], |    )--[a-z-]+' | grep -oE -- '--[a-z-]+' | sort | tr '\n' ' ')" \
        "$(complete_words gpuctl "$c" -- | grep -E -- '^--' | sort | tr '\n' ' ')"
done
finish
