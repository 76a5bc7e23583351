"""Async collectives: a read before ``wait()`` is a race, never the reduced value.

``h = dist.all_reduce(y, async_op=True); out = y * 2; h.wait()`` used to be captured as if the
call had completed, so ``out`` read the reduced ``y`` and the program VERIFIED against a spec that
doubles the sum. Capture now issues the collective at the call, lands it at ``wait()``, and refuses
any use of its tensors in between (naming the line), or a handle never waited for. The certificate
of the correct program with the racy read modelled (``y`` before the collective) does not replay.
"""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402

from certificates.limits import canonical_bytes  # noqa: E402
from certificates.replay import replay  # noqa: E402
from verifier.capture import CaptureError, capture_spmd  # noqa: E402

CASE = '''
import torch
import torch.distributed as dist
from verifier.capture.case import CaptureCase
from verifier.capture.relations import partial, replicate


class Spec(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Impl(torch.nn.Module):
    def forward(self, x):
        y = x * 1
{body}
        return out


CASE = CaptureCase(name="async", spec=Spec, impl=lambda rank, world: Impl(), world_size=2,
                   inputs={{"x": (2, 3)}}, input_relation={{"x": partial("x")}},
                   expect={{"out": replicate("out")}})
'''
RACE = """\
        h = dist.all_reduce(y, async_op=True)
        out = y * 2
        h.wait()"""
WAITED = """\
        h = dist.all_reduce(y, async_op=True)
        z = x * 0
        h.wait()
        out = y * 2 + z"""
BEFORE = """\
        out = y * 2
        dist.all_reduce(y)"""   # the racy read, modelled as the value before the collective


def _case(tmp_path, body: str) -> str:
    path = tmp_path / "async_case.py"
    path.write_text(CASE.format(body=textwrap.indent(textwrap.dedent(body), " " * 8)))
    return str(path)


def test_read_before_wait_is_refused_with_its_line(tmp_path, capsys):
    from verifier.cli import main

    assert main(["verify", _case(tmp_path, RACE)]) != 0
    err = capsys.readouterr().err
    assert "out = y * 2" in err and "before its wait()" in err and "async_case.py:" in err, err


def test_waited_async_call_verifies_and_replays(tmp_path, capsys):
    from verifier.cli import main

    cert = tmp_path / "c.json"
    assert main(["verify", _case(tmp_path, WAITED), "--emit-cert", str(cert)]) == 0, capsys.readouterr().out
    assert main(["replay", str(cert)]) == 0


def test_certificate_with_the_racy_read_is_rejected(tmp_path, capsys):
    """The control's certificate with the impl that reads ``y`` before the collective."""
    from verifier.capture.case import load_case
    from verifier.cli import main

    cert_path = tmp_path / "c.json"
    assert main(["verify", _case(tmp_path, WAITED), "--emit-cert", str(cert_path)]) == 0
    cert = json.loads(cert_path.read_text())
    racy = load_case(_case(tmp_path, BEFORE)).impl
    impl = next(a for a in cert["subject"]["artifacts"] if a["id"] == "impl")
    impl["embedded"], impl["sha256"] = racy, hashlib.sha256(canonical_bytes(racy)).hexdigest()
    cert_path.write_text(json.dumps(cert))
    try:
        results = replay(str(cert_path))
    except Exception as e:   # malformed (the evidence names tensors the racy graph lacks): no ACCEPT
        assert "ACCEPT" not in str(e)
        return
    assert not all(r.ok for r in results), [r.detail for r in results]


class _Program(torch.nn.Module):
    def __init__(self, body) -> None:
        super().__init__()
        self.body = body

    def forward(self, x):
        return self.body(x * 1)


def _capture(body):
    return capture_spmd("async", lambda r, w: _Program(body), 2, {"x": (4, 3)})


def _view_read(y):
    v = y.view(-1)
    h = dist.all_reduce(y, async_op=True)
    out = v + 1          # a view of the pending tensor
    h.wait()
    return out


def _gather_output_read(y):
    z = torch.empty(8, 3)
    h = dist.all_gather_into_tensor(z, y, async_op=True)
    out = z.sum()
    h.wait()
    return out


def _never_waited(y):
    dist.all_reduce(y, async_op=True)
    return y * 2


def _irecv_read(y):
    h = dist.irecv(y, src=1 - dist.get_rank())
    out = y + 1
    h.wait()
    return out


def _isend_write(y):
    h = dist.isend(y, dst=1 - dist.get_rank())
    y.add_(1)            # the send may carry the new value
    h.wait()
    return y


def _isend_data_write(y):
    h = dist.isend(y, dst=1 - dist.get_rank())
    y.data = y * 2       # a property setter writes too
    h.wait()
    return y


@pytest.mark.parametrize("body", [_view_read, _gather_output_read, _never_waited, _irecv_read, _isend_write,
                                  _isend_data_write],
                         ids=lambda f: f.__name__)
def test_other_races_are_refused(body):
    with pytest.raises(CaptureError, match="before its wait|never waited for"):
        _capture(body)


def _gather_after_wait(y):
    z = torch.empty(8, 3)
    h = dist.all_gather_into_tensor(z, y, async_op=True)
    w = y.new_ones(1) * 3  # no use of y or z
    h.wait()
    return z * w


def _isend_read(y):
    z = torch.empty_like(y)
    sent, got = dist.isend(y, dst=1 - dist.get_rank()), dist.irecv(z, src=1 - dist.get_rank())
    out = y * 2          # reading what is being sent is no race (pipelining's backward does it)
    sent.wait()
    got.wait()
    return out + z


def test_isend_tensor_may_be_read_before_wait():
    g = _capture(_isend_read).graph
    assert sum(n["target"] == "c10d.send_recv.default" for n in g["nodes"]) == 2


def test_async_gather_after_wait_is_captured():
    g = _capture(_gather_after_wait).graph
    assert any("all_gather_into_tensor" in n["target"] for n in g["nodes"])


def test_module_imported_during_a_trace_keeps_the_real_api(tmp_path, monkeypatch):
    """``from torch.distributed import all_reduce, scatter`` run while a trace has swapped the API
    in must not keep the capture stand-ins after the trace (DTensor failed later in the same run)."""
    import importlib
    import sys

    (tmp_path / "late_import_mod.py").write_text("from torch.distributed import all_reduce, scatter\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def body(y):
        importlib.import_module("late_import_mod")
        return y * 2

    _capture(body)
    mod = sys.modules.pop("late_import_mod")
    assert mod.all_reduce is dist.all_reduce and mod.scatter is dist.scatter
