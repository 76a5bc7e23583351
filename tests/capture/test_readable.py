"""Graphs in their readable form (``print_readable``) as input: ``pvcert verify --spec S.txt --impl
R0.txt R1.txt --relation REL.json`` (docs/cases.md). The bundled TP MLP verifies and replays, its
all-reduce removed is refuted; the text is parsed, never run: anything but operator calls is a
one-line MALFORMED error (exit 2) naming the file and line."""

import os

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)

from certificates import cli as checker_cli  # noqa: E402
from verifier.capture.readable import readable_module  # noqa: E402
from verifier.cli import main  # noqa: E402

SAVED = os.path.join(capture_helpers.ROOT, "examples", "saved")


def ex(name):
    return os.path.join(SAVED, name)


def verify(capsys, spec, impls, *extra):
    rc = main(["verify", "--spec", str(spec), "--impl", *map(str, impls), "--relation", ex("relation_readable.json"),
               *extra])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_readable_tp_mlp_verified_and_replayed(capsys, tmp_path):
    cert = tmp_path / "c.json"
    rc, out, err = verify(capsys, ex("spec.txt"), [ex("r0.txt"), ex("r1.txt")], "--emit-cert", str(cert))
    assert rc == 0 and "VERIFIED readable_tp_mlp" in out, out + err
    assert checker_cli.main([str(cert)]) == 0


def test_readable_without_the_all_reduce_is_refuted(capsys, tmp_path):
    impls = []
    for r in range(2):
        text = open(ex(f"r{r}.txt")).read()
        text = "\n".join(line for line in text.splitlines() if "_c10d_functional" not in line)
        impls.append(tmp_path / f"r{r}.txt")
        impls[-1].write_text(text.replace("aten.add.Tensor(wait_tensor,", "aten.add.Tensor(linear_1,"))
    rc, out, err = verify(capsys, ex("spec.txt"), impls)
    assert rc == 1 and "REFUTED" in out, out + err


def test_make_fx_readable_form_is_read(tmp_path):
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.ops.aten.mm(x, x.t()).sum(0))(torch.randn(2, 3))
    path = tmp_path / "g.txt"
    path.write_text(gm.print_readable(print_output=False))   # "class <lambda>(torch.nn.Module):"
    mod, inputs = readable_module(str(path))
    assert [(n, m[0], m[2]) for n, _, m, _ in inputs] == [("x_1", (2, 3), torch.float32)]
    x = torch.randn(2, 3)
    assert torch.allclose(mod(x)[0], (x @ x.t()).sum(0))


BAD = {
    "print('x')\nclass G(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        return (x,)\n":
        "one 'class",
    "class G(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        y = __import__('os').system('touch {sentinel}')\n        return (y,)\n":
        "line 3: call of",
    "class G(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        c = self._tensor_constant0\n        return (c,)\n":
        "tensor constant",
    "class G(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        y = torch.ops.mylib.fused.default(x)\n        return (y,)\n":
        "custom ops",
    "class G(torch.nn.Module):\n    def forward(self, x):\n        return (x,)\n": "annotation",
    "class G(torch.nn.Module):\n    def forward(self, x: \"f32[2]\"):\n        y = torch.ops.aten.neg.default(z)\n        return (y,)\n":
        "'z' is not defined",
}


@pytest.mark.parametrize("text,why", BAD.items(), ids=range(len(BAD)))
def test_bad_readable_forms_are_one_line_errors_and_nothing_runs(text, why, tmp_path, capsys):
    sentinel = tmp_path / "ran"
    spec = tmp_path / "spec.txt"
    spec.write_text(text.replace("{sentinel}", str(sentinel)))
    rc, out, err = verify(capsys, spec, [ex("r0.txt"), ex("r1.txt")])
    assert rc == 2 and why in err and len(err.strip().splitlines()) == 1, err
    assert not sentinel.exists()
