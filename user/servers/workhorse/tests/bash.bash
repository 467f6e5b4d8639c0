#!/bin/bash
# Debian's bash on Keep and on the host (tools/test_linux.py runs both, with
# busybox's applets as the external commands, and compares the output):
# expansions, functions, pipes, subshells and command substitution,
# redirections and descriptors, files, background jobs and wait, traps and
# kill.  Usage: bash.bash DIR (a writable directory).
set -u
dir=${1:-/tmp}/bash-test
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir" || exit 1

# Expansions, arrays, arithmetic.
arr=(one two three)
echo "array: ${#arr[@]} ${arr[1]} ${arr[*]:1}"
declare -A colour=([sky]=blue [grass]=green)
echo "assoc: ${colour[sky]} ${colour[grass]} ${#colour[@]}"
echo "arith: $((2 ** 10)) $((7 % 3)) $((0x1f)) $(( (3 + 4) * 5 ))"
s="Hello, World"
echo "string: ${s,,} ${s^^} ${s/World/Keep} ${#s} ${s:7} ${s%,*}"
echo "brace:" {a..e} {1..9..3} x{y,z}
printf 'printf: %05d|%-5s|%x|%s\n' 42 ab 255 "$(printf '%q' 'a b')"
case "notes.txt" in *.md) echo "case: md" ;; *.txt) echo "case: txt" ;; esac

# Functions, locals, recursion through command substitution.
fact() {
    local n=$1
    if ((n <= 1)); then echo 1; else echo $((n * $(fact $((n - 1))))); fi
}
echo "fact 10 = $(fact 10)"

# Pipes and external programs (subprocesses).
echo "sevens: $(seq 1 100 | grep 7 | wc -l)"
printf '%s\n' pear apple fig | sort | tr '\n' ' '
echo
echo "upper: $(echo inner | tr a-z A-Z)"
seq 5 | { sum=0; while read -r n; do sum=$((sum + n)); done; echo "sum in pipe: $sum"; }
(cd / && echo "subshell: $PWD")
echo "still in: ${PWD##*/}"
false | true
echo "pipe status: $? ${PIPESTATUS[*]}"
set -o pipefail
false | true
echo "pipefail: $?"
set +o pipefail

# Files, here documents, descriptors.
for i in 1 2 3; do echo "line $i" >>f.txt; done
while read -r a b; do echo "[$a|$b]"; done <f.txt
cat <<EOT
heredoc $((1 + 1)) ${arr[0]}
EOT
tr a-z A-Z <<<"here string"
exec 3>g.txt
echo "through fd 3" >&3
exec 3>&-
cat g.txt
exec 4<f.txt
read -r first <&4
exec 4<&-
echo "first: $first"
[[ -f f.txt && ! -e nosuch && -s g.txt ]] && echo "tests: ok"
echo "bytes: $(wc -c <f.txt)"
mkdir sub && touch sub/b sub/a && echo "glob:" sub/*
mv f.txt h.txt && ls -1
rm -r sub h.txt g.txt && echo "left: $(ls | wc -l)"
nosuchcommand 2>/dev/null
echo "not found: $?"
echo "to stderr" >&2

# Background jobs and wait.
sleep 0.2 &
wait $!
echo "waited: $?"
(exit 7) &
wait $!
echo "background exit: $?"
sleep 30 &
victim=$!
kill "$victim"
wait "$victim"
echo "killed sleep: $?"

# Signals and traps.
trap 'echo "trap: USR1"' USR1
kill -USR1 $$
echo "after USR1"
(trap 'echo "child trap: TERM"; exit 3' TERM; kill -TERM $BASHPID; sleep 5)
echo "child status: $?"
trap - USR1
trap 'echo "trap: EXIT"' EXIT
echo "done"
