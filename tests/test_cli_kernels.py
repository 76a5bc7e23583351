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


def test_grid_checks_every_cta_and_the_claim_says_so(tmp_path):
    """--grid: every CTA of the launch, the certificate's claim covers the whole launch, replay says so."""
    import json

    cert = tmp_path / "g.json"
    r = run_pvcert("kernels", "reduce8_shfl", "--grid", "--emit-cert", str(cert))
    assert r.returncode == 0 and "the whole launch (every CTA of grid (2, 1, 1)" in r.stdout, r.stdout + r.stderr
    (claim,) = json.loads(cert.read_text())["claims"]
    assert claim["cta"] == "all"
    one = tmp_path / "one.json"
    r = run_pvcert("kernels", "reduce8_shfl", "--emit-cert", str(one))
    assert r.returncode == 0 and json.loads(one.read_text())["claims"][0]["cta"] != "all"
    r = run_pvcert("replay", str(cert))
    assert r.returncode == 0 and "checked CTA(s): all" in r.stdout, r.stdout
