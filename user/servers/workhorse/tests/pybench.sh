# The Python workloads of `make bench` (docs/performance.md, "The
# workhorse"), the same on Keep (tools/workhorse_bench.py) and on the Linux
# guest (tools/linuxbench.py), both with the workhorse's python3.11 and
# standard library: each run by benchrun between the icount plugin's
# markers.  Not a conformance test.
#   sh pybench.sh DIR RUNS PREFIX    (PREFIX: "wh." on Keep, "linux." on Linux)
# python3 starts in an empty directory (sys.path[0] for -c) with the
# environment the workhorse gives its programs, on both sides alike.
d=$1
runs=$2
p=$3
B=/tests/benchrun
PY=/usr/bin/python3
E="/bin/busybox env -i PATH=/bin:/usr/bin HOME=/ TERM=vt100"
rm -rf $d
mkdir -p $d/cwd || exit 1
cd $d/cwd || exit 1
# One run outside the regions: both sides start with the files read once.
$E $PY -c pass || exit 1
r=0
while [ $r -lt $runs ]; do
    $E $B run ${p}python.startup 1 $PY -c pass
    $E $B run ${p}python.compute 1 $PY /tests/pybench.py compute
    $E $B run ${p}python.files 1 $PY /tests/pybench.py files $d/files
    r=$((r+1))
done
echo "pybench: done"
