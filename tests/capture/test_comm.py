"""Communication under capture: in-place and async torch.distributed calls, subgroups
(names reused across ranks), send/recv pairing, broadcast, list variants, and errors."""

import pytest

torch = pytest.importorskip("torch")

import capture_helpers  # noqa: E402,F401  (puts the repository root on sys.path)
import torch.distributed as dist  # noqa: E402

from capture_helpers import collectives, producer, roundtrip  # noqa: E402
from verifier.capture import CaptureError, capture_spmd  # noqa: E402


class InPlace(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        dist.all_reduce(y)                               # in place, synchronous
        h = dist.all_reduce(y, op=dist.ReduceOp.MAX, async_op=True)
        h.wait()
        z = torch.empty(2 * dist.get_world_size(), 3)
        dist.all_gather_into_tensor(z, y, async_op=True).wait()
        parts = [torch.empty(2, 3) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, y)
        return z + torch.cat(parts)


@pytest.mark.parametrize("world", [2, 8])
def test_inplace_and_async(world):
    cap = capture_spmd("inplace", lambda r, w: InPlace(), world, {"x": (2, 3)})
    g = cap.graph
    roundtrip(g)
    kinds = [n["target"].split(".")[1] for n in collectives(g)]
    assert kinds == ["all_reduce", "all_reduce", "all_gather_into_tensor", "all_gather_into_tensor"]
    assert [n["attrs"].get("reduce_op") for n in collectives(g)[:2]] == ["sum", "max"]
    # the second all_reduce reads the first one's result (the in-place update is a rebinding)
    first, second = collectives(g)[:2]
    assert producer(g, second["inputs"][0]) is first or second["inputs"][0] in first["outputs"]


class SubGroups(torch.nn.Module):
    """Two TP groups of 2 inside a world of 4; the group objects are created per rank."""

    def __init__(self, rank):
        super().__init__()
        self.tp = [dist.new_group([0, 1]), dist.new_group([2, 3])][rank // 2]
        self.dp = [dist.new_group([0, 2]), dist.new_group([1, 3])][rank % 2]

    def forward(self, x):
        dist.all_reduce(x, group=self.tp)
        y = x + 1
        dist.all_reduce(y, group=self.dp)
        return y


def test_subgroups_resolved_to_ranks():
    cap = capture_spmd("groups", lambda r, w: SubGroups(r), 4, {"x": (2,)})
    roundtrip(cap.graph)
    groups = sorted(n["group"] for n in collectives(cap.graph))
    assert groups == [[0, 1], [0, 2], [1, 3], [2, 3]]


class Pipeline(torch.nn.Module):
    """Rank r computes, sends to r+1; the last stage returns the result."""

    def __init__(self, rank, world):
        super().__init__()
        self.rank, self.world = rank, world
        self.w = torch.nn.Parameter(torch.randn(3, 3))

    def forward(self, x):
        if self.rank > 0:
            x = torch.empty(2, 3)
            dist.recv(x, src=self.rank - 1)
        y = torch.relu(x @ self.w)
        if self.rank < self.world - 1:
            dist.isend(y, dst=self.rank + 1).wait()
        return y


@pytest.mark.parametrize("world", [2, 4])
def test_send_recv_pairs(world):
    cap = capture_spmd("pipe", lambda r, w: Pipeline(r, w), world, {"x": (2, 3)})
    g = cap.graph
    roundtrip(g)
    p2p = collectives(g, "send_recv")
    assert [n["group"] for n in p2p] == [[r, r + 1] for r in range(world - 1)]
    for n in p2p:
        src = producer(g, n["inputs"][0])
        assert src["target"] == "aten.relu.default" and src["rank"] == n["group"][0]


class Bcast(torch.nn.Module):
    def forward(self, x):
        dist.broadcast(x, src=1)
        return x * 1


def test_broadcast_and_all_to_all_lists():
    cap = capture_spmd("bcast", lambda r, w: Bcast(), 2, {"x": (2,)})
    roundtrip(cap.graph)
    (b,) = collectives(cap.graph)
    assert b["target"] == "_c10d_functional.broadcast.default" and b["attrs"]["src"] == 1

    class A2A(torch.nn.Module):
        def forward(self, x):
            outs = [torch.empty(1, 2) for _ in range(2)]
            dist.all_to_all(outs, list(x.split(1)))
            return torch.cat(outs)

    cap = capture_spmd("a2a", lambda r, w: A2A(), 2, {"x": (2, 2)})
    roundtrip(cap.graph)
    (a,) = collectives(cap.graph)
    assert a["attrs"]["input_split_sizes"] == [[1, 1], [1, 1]]


class Mismatch(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.rank = rank

    def forward(self, x):
        if self.rank == 0:
            dist.all_reduce(x)
        else:
            out = torch.empty(4, 2)
            dist.all_gather_into_tensor(out, x)
            x = out[:2]
        return x * 1


def test_mismatched_collectives():
    with pytest.raises(CaptureError, match="rank 0 calls all_reduce.*rank 1 calls all_gather"):
        capture_spmd("mismatch", lambda r, w: Mismatch(r), 2, {"x": (2, 2)})


def test_missing_partner_and_unsupported_collective():
    class Lonely(torch.nn.Module):
        def __init__(self, rank):
            super().__init__()
            self.rank = rank

        def forward(self, x):
            if self.rank == 0:
                dist.all_reduce(x)
            return x * 1

    with pytest.raises(CaptureError, match="rank 0 waits in .*all_reduce.*ranks \\[1\\] never join"):
        capture_spmd("lonely", lambda r, w: Lonely(r), 2, {"x": (2,)})

    class Reduce(torch.nn.Module):
        def forward(self, x):
            dist.reduce(x, dst=0)
            return x * 1

    with pytest.raises(CaptureError, match="torch.distributed.reduce is not supported"):
        capture_spmd("reduce", lambda r, w: Reduce(), 2, {"x": (2,)})


def test_process_group_object_call_is_named():
    class Direct(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            dist.distributed_c10d._get_default_group().allreduce([y]).wait()
            return y

    with pytest.raises(CaptureError, match="c10d.allreduce_.default \\(a collective called on a ProcessGroup"):
        capture_spmd("direct", lambda r, w: Direct(), 2, {"x": (2,)})


def test_uninitialized_read_is_named():
    class Empty(torch.nn.Module):
        def forward(self, x):
            return torch.empty(2) + x

    with pytest.raises(CaptureError, match="aten.empty.memory_format \\(reads an uninitialized tensor\\)"):
        capture_spmd("empty", lambda r, w: Empty(), 2, {"x": (2,)})


def test_process_group_object_call_never_dropped():
    """Even when no result of the c10d call is read, the call is reported, not skipped."""
    class Direct(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            dist.distributed_c10d._get_default_group().allreduce([y])
            return y + 1

    with pytest.raises(CaptureError, match="c10d.allreduce_.default"):
        capture_spmd("direct2", lambda r, w: Direct(), 2, {"x": (2,)})
