"""`pvcert kernels`: verdicts on corpus pairs, documented exit codes."""

from conftest import run_pvcert


def test_kernels_expected_verdicts_and_exit_codes():
    r = run_pvcert("kernels", "reduce3_sequential", "reduce5_unroll_last_warp", "--check-expected")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "racy (optimized)" in r.stdout and "no barrier orders them" in r.stdout
    r = run_pvcert("kernels", "reduce5_unroll_last_warp")  # racy: not equivalent, exit 1
    assert r.returncode == 1
    r = run_pvcert("kernels", "no_such_pair")
    assert r.returncode == 2 and "no pair named 'no_such_pair'" in r.stderr
