"""Runs modules of Python's regression suite (Debian's
libpython3.11-testsuite) with unittest and prints what each gave, one line
a module, for tools/test_python_suite.py; the same file runs on the host
(under chroot, with the workhorse's root file system) and on Keep's
workhorse, as /pysuite/run.py:

    python3 /pysuite/run.py test_x [test_y ...]

Each module is loaded as `python3 -m test` loads it (unittest's loader,
its load_tests included, or its test_main), with regrtest's defaults: no
optional resource (network, cpu, largefile...) enabled, a fresh working
directory under /tmp, verbosity 0.  Per module it prints

    PYSUITE MODULE run=N pass=P fail=F error=E skip=S xfail=X xpass=U
    PYSUITE-FAIL MODULE TEST-ID :: the error's last line  (each failure or error)
    PYSUITE-SKIP MODULE TEST-ID :: the reason               (each skipped test)

and `PYSUITE-DONE MODULE` last; a module that cannot be imported is
`PYSUITE MODULE import-error ...`.  The tests' own output goes to a file in
the working directory, not to the terminal."""
import os
import shutil
import sys
import tempfile
import traceback
import unittest


def run(name):
    from test import support
    support.use_resources = []
    support.verbose = 0
    work = tempfile.mkdtemp(prefix=f"pysuite-{name}-", dir="/tmp")
    old = os.getcwd()
    os.chdir(work)
    out = open(os.path.join(work, "output"), "w")
    try:
        try:
            mod = __import__(f"test.{name}", fromlist=["*"])
        except unittest.SkipTest as e:
            print(f"PYSUITE {name} run=0 pass=0 fail=0 error=0 skip=0 xfail=0 xpass=0 skipped-module {str(e)[:80]!r}")
            return
        except BaseException as e:  # noqa: BLE001 - the module's failure is a result
            print(f"PYSUITE {name} import-error {type(e).__name__}: {str(e)[:100]!r}")
            return
        try:
            suite = unittest.TestLoader().loadTestsFromModule(mod)
        except BaseException as e:  # noqa: BLE001 - a module whose tests cannot be made
            print(f"PYSUITE {name} import-error {type(e).__name__}: {str(e)[:100]!r}")
            return
        result = unittest.TextTestResult(out, True, 0)
        stdout, stderr = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = out
        try:
            if suite.countTestCases() == 0 and hasattr(mod, "test_main"):
                result.startTest(unittest.FunctionTestCase(mod.test_main))
                try:
                    mod.test_main()
                    result.addSuccess(None)
                except unittest.SkipTest as e:
                    result.skipped.append((f"{name}.test_main", str(e)))
                except BaseException:  # noqa: BLE001
                    result.failures.append((f"{name}.test_main", traceback.format_exc()))
            else:
                suite.run(result)
        finally:
            sys.stdout, sys.stderr = stdout, stderr
        # A test counts once however many of its subtests failed, and
        # whether it failed, erred in its tear-down or both.
        bad = {id(getattr(t, "test_case", t)) if not isinstance(t, str) else t
               for t, _ in result.failures + result.errors}
        bad |= {id(t) for t in result.unexpectedSuccesses}
        passed = result.testsRun - len(bad) - len(result.skipped)
        print(f"PYSUITE {name} run={result.testsRun} pass={passed} fail={len(result.failures)} "
              f"error={len(result.errors)} skip={len(result.skipped)} xfail={len(result.expectedFailures)} "
              f"xpass={len(result.unexpectedSuccesses)}")
        for test, trace in result.failures + result.errors:
            last = [line for line in trace.strip().splitlines() if line.strip()][-1:] or [""]
            print(f"PYSUITE-FAIL {name} {test if isinstance(test, str) else test.id()} :: {last[0][:160]}")
        for test, why in result.skipped:
            print(f"PYSUITE-SKIP {name} {test if isinstance(test, str) else test.id()} :: {str(why)[:120]}")
        for test in result.unexpectedSuccesses:
            print(f"PYSUITE-FAIL {name} {test.id()} (unexpected success)")
    finally:
        out.close()
        os.chdir(old)
        shutil.rmtree(work, ignore_errors=True)
        print(f"PYSUITE-DONE {name}", flush=True)


if __name__ == "__main__":
    for n in sys.argv[1:]:
        run(n)
    sys.stdout.flush()
    os._exit(0)
