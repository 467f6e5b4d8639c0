# busybox's shell and applets; $1 is a scratch directory.
mkdir -p "$1" && cd "$1" || exit 1
echo "echo: hello"
mkdir -p d/e && echo abc > d/f && cat d/f
ls -1 d
wc -c d/f
printf 'pear\napple\nfig\n' | sort
printf 'pear\napple\nfig\n' | sort -r | head -n 1
seq 1 10 | grep 1 | tr '\n' ' '; echo
echo "x y z" | cut -d' ' -f2
for i in 1 2 3; do echo "loop $i"; done | wc -l
echo $((6 * 7))
sh -c 'exit 3'; echo "status $?"
false || echo "false failed"
cp d/f d/g && cmp d/f d/g && echo "cp ok"
mv d/g d/h && ls -1 d
rm -r d && ls -1
echo "sed: $(echo hello | sed s/l/L/g)"
echo "awk: $(printf '1 2\n3 4\n' | awk '{s += $2} END {print s}')"
x=0; while [ $x -lt 5 ]; do x=$((x + 1)); done; echo "while: $x"
case foo in f*) echo "case ok";; esac
echo a > one; echo b >> one; cat one; rm one
basename /a/b/c.txt .txt; dirname /a/b/c.txt
test -d /tmp && echo "test -d ok"
printf '#!/bin/sh\necho "script ran with $1"\n' > s.sh && chmod +x s.sh && ./s.sh arg; rm s.sh
echo done
