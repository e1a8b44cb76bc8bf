#!/usr/bin/env bash
# Branch points per file group (issue #19's "the machines decide" measure): counts, outside
# comments and string literals, the keywords and operators where control can go two ways:
# if, guard, case (a switch arm or a pattern), while, for, catch, &&, ||, ??, and ternary ?.
# Usage: bench/branches.sh [git-revision]   (default: the work tree)
set -euo pipefail
rev="${1:-}"
files() {
    if [ -n "$rev" ]; then git ls-tree -r --name-only "$rev" -- Sources; else find Sources -name "*.swift" | sort; fi
}
content() {
    if [ -n "$rev" ]; then git show "$rev:$1"; else cat "$1"; fi
}
count() {
    local total=0 n f
    for f in "$@"; do
        n=$(content "$f" | sed -e 's#//.*$##' -e 's/"[^"]*"//g' |
            grep -oE '\b(if|guard|case|while|for|catch)\b|&&|\|\||\?\?| \? ' | wc -l)
        total=$((total + n))
    done
    echo "$total"
}
all=$(files)
group() {   # name, extended regex over paths
    local sel
    sel=$(echo "$all" | grep -E "$2" || true)
    printf '%-34s %5s branch points in %s files, %s lines\n' "$1" "$(count $sel)" "$(echo "$sel" | grep -c . || true)" \
        "$(for f in $sel; do content "$f"; done | wc -l)"
}
group "ClientConnection*" '^Sources/Airlock/ClientConnection'
group "Exchange executor (Exchange+*)" '^Sources/Airlock/Exchange\+'
group "Tunnel executor (Tunnel*)" '^Sources/Airlock/Tunnel'
group "ExchangeMachine + ClientLifecycle" '^Sources/AirlockSession/(ExchangeMachine|ClientLifecycle)\.swift'
group "TunnelMachine" '^Sources/AirlockSession/TunnelMachine\.swift'
group "GatewayPhases*" '^Sources/Airlock/GatewayPhases'
