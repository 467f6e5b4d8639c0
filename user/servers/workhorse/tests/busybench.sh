# The busybox workloads of `make bench` (docs/performance.md, "The
# workhorse"), the same on Keep (tools/workhorse_bench.py) and on the Linux
# guest (tools/linuxbench.py): each run by benchrun between the icount
# plugin's markers.  Not a conformance test.
#   sh busybench.sh DIR RUNS [PREFIX]    (PREFIX: none on Keep, "linux." on Linux)
d=$1
runs=$2
p=$3
B=/tests/benchrun
BB=/bin/busybox
mkdir -p $d
$B text $d/data 8388608 || exit 1
$B lines $d/lines 100000 || exit 1
$B files $d/files 200 || exit 1
r=0
while [ $r -lt $runs ]; do
    $B run ${p}busybox.shell_loop 1 $BB sh -c 'i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done'
    $B run ${p}busybox.fork_exec_true 1 $BB sh -c 'i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done'
    $B run ${p}busybox.sha256sum 1 $BB sha256sum $d/data
    $B run ${p}busybox.gzip 1 $BB gzip -c $d/data
    $B run ${p}busybox.sort 1 $BB sort $d/lines
    rm -f $d/t.tar
    $B run ${p}busybox.tar 1 $BB tar -cf $d/t.tar -C $d files
    r=$((r+1))
done
echo "busybench: done"
