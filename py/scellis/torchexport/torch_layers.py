"""The layers an exported model.py uses where torch.nn has no module with the program's parameter layout or
semantics. Each class is copied into model.py only when the program uses it (scellis.torchexport.model
reads this file as text; Scellis itself never imports it, so the browser's Python needs no torch)."""

from __future__ import annotations

import hashlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

NF4_LEVELS: tuple[float, ...] = ()  # the 16 NF4 levels, written into model.py from scellis.ops.nf4


class Dense(nn.Module):
    """x @ weight + bias with weight [in, out], as Scellis's linear keeps it (torch.nn.Linear keeps [out, in])."""

    def __init__(self, fan_in: int, features: int, bias: bool = True, trainable: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(fan_in, features), requires_grad=trainable)
        self.bias = nn.Parameter(torch.empty(features), requires_grad=trainable) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bias is None:
            return x @ self.weight
        if x.dim() == 2:
            return torch.addmm(self.bias, x, self.weight)
        return torch.matmul(x, self.weight) + self.bias


class Tensor(nn.Module):
    """A learned tensor the same for every example: its value with a batch axis of 1 in front."""

    def __init__(self, *shape: int, trainable: bool = True) -> None:
        super().__init__()
        self.value = nn.Parameter(torch.empty(shape), requires_grad=trainable)

    def forward(self) -> torch.Tensor:
        return self.value.unsqueeze(0)


class BatchNorm(nn.Module):
    """Batch norm over every axis but 1, running statistics as Scellis keeps them (no batch counter). Under
    torchrun the batch statistics are those of the global batch (the ranks' sums are all-reduced, with their
    gradients), so N processes normalise exactly as one process with the whole batch does."""

    def __init__(self, channels: int, momentum: float, eps: float, affine: bool = True, trainable: bool = True) -> None:
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.running_mean: torch.Tensor
        self.running_var: torch.Tensor
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))
        self.weight = nn.Parameter(torch.ones(channels), requires_grad=trainable) if affine else None
        self.bias = nn.Parameter(torch.zeros(channels), requires_grad=trainable) if affine else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        distributed = self.training and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
        if not distributed:
            return F.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, self.training, self.momentum, self.eps
            )
        from torch.distributed.nn.functional import all_reduce

        axes = [0, *range(2, x.dim())]
        shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
        count = x.numel() // x.shape[1] * dist.get_world_size()
        mean = all_reduce(x.sum(dim=axes)) / count
        centred = x - mean.view(shape)
        var = all_reduce((centred * centred).sum(dim=axes)) / count
        with torch.no_grad():
            m = self.momentum
            self.running_mean.mul_(1 - m).add_(mean.detach(), alpha=m)
            self.running_var.mul_(1 - m).add_(var.detach() * (count / max(count - 1, 1)), alpha=m)
        out = centred * torch.rsqrt(var.view(shape) + self.eps)
        if self.weight is not None and self.bias is not None:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        return out


class Nf4Linear(nn.Module):
    """x W^T for a frozen W [features, in] kept as NF4 words in the engine's layout (scellis.ops.nf4: codes 8
    a word, then float16 block scales 2 a word), decoded once, exactly, to torch's default dtype (each value
    LEVELS[code] * scale, one rounded product): the weights the Scellis run trained against. The decoded
    copy takes 4 bytes a weight; it is not part of the state."""

    def __init__(self, fan_in: int, features: int) -> None:
        super().__init__()
        self.rows, self.cols = features, fan_in
        blocks = features * fan_in // 64
        self.weight: torch.Tensor
        self.register_buffer("weight", torch.zeros(features * fan_in // 8 + (blocks + 1) // 2, dtype=torch.int32))
        self.decoded: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = torch.get_default_dtype()
        if self.decoded is None or self.decoded.device != x.device or self.decoded.dtype != dtype:
            n = self.rows * self.cols
            words = self.weight.to(torch.int64) & 0xFFFFFFFF
            i = torch.arange(n, device=words.device)
            codes = (words[i // 8] >> (4 * (i % 8))) & 0xF
            blocks = torch.arange(n // 64, device=words.device)
            halves = (words[n // 8 + blocks // 2] >> (16 * (blocks % 2))) & 0xFFFF
            scales = halves.to(torch.int16).view(torch.float16).to(dtype)
            levels = torch.tensor(NF4_LEVELS, dtype=dtype, device=words.device)[codes]
            self.decoded = (levels.view(-1, 64) * scales[:, None]).view(self.rows, self.cols)
        return F.linear(x, self.decoded)


class State(nn.Module):
    """A tensor the loop carries from step to step (a program's state node, `<id>.value`): not trained; an
    update node gives its next value, which forward sets in training (evaluation changes nothing)."""

    def __init__(self, *shape: int) -> None:
        super().__init__()
        self.value: torch.Tensor
        self.register_buffer("value", torch.zeros(shape))


class Philox:
    """Scellis's counter-based draws (scellis.rng), reproduced: element i of a draw site is Philox4x32-10 of
    the counter (i mod 2**32, site, position, i div 2**32) under the substream's key, the first 8 bytes of
    SHA-256("scellis.rng/1", seed, name). The words are Scellis's bit for bit (32-bit products are taken in
    16-bit halves, so int64 never overflows); uniform, Bernoulli and integer draws are exactly Scellis's,
    normal ones are Box-Muller in float64, rounded once to torch's default dtype (Scellis's devices agree
    with that within float32 rounding). `first` and `count` pick elements first..first+count-1 of a site:
    a rank's rows of a batched draw are the ones the whole batch would give them."""

    MASK = 0xFFFFFFFF
    M = (0xD2511F53, 0xCD9E8D57)
    W = (0x9E3779B9, 0xBB67AE85)

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.keys: dict[str, tuple[int, int]] = {}

    def key(self, substream: str) -> tuple[int, int]:
        if substream not in self.keys:
            digest = hashlib.sha256(f"scellis.rng/1\0{self.seed}\0{substream}".encode()).digest()
            self.keys[substream] = (int.from_bytes(digest[0:4], "little"), int.from_bytes(digest[4:8], "little"))
        return self.keys[substream]

    @staticmethod
    def _product(a: torch.Tensor, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(high, low) 32-bit words of a * b, for 32-bit a (in int64) and b."""
        low, high = (a & 0xFFFF) * b, (a >> 16) * b
        return (high + (low >> 16)) >> 16, (((high & 0xFFFF) << 16) + low) & Philox.MASK

    def words(self, substream: str, counters: list[torch.Tensor]) -> list[torch.Tensor]:
        (c0, c1, c2, c3), (k0, k1) = counters, self.key(substream)
        for r in range(10):
            if r:
                k0, k1 = (k0 + self.W[0]) & self.MASK, (k1 + self.W[1]) & self.MASK
            high0, low0 = self._product(c0, self.M[0])
            high1, low1 = self._product(c2, self.M[1])
            c0, c1, c2, c3 = high1 ^ c1 ^ k0, low1, high0 ^ c3 ^ k1, low0
        return [c0, c1, c2, c3]

    def counters(self, site: int, position: int, first: int, count: int, device: torch.device) -> list[torch.Tensor]:
        i = torch.arange(first, first + count, dtype=torch.int64, device=device)
        return [i & self.MASK, torch.full_like(i, site), torch.full_like(i, position), i >> 32]

    def draw(
        self, kind: str, substream: str, site: int, position: int, shape: tuple[int, ...], *, first: int = 0,
        p: float = 0.0, n: int = 0, device: torch.device | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """Elements first.. of the site's draws, `shape` of them: "uniform" floats in [0, 1), "normal",
        "bernoulli" (True with probability 1 - p), "integer" in [0, n) (int64)."""
        count = 1
        for size in shape:
            count *= size
        counters = self.counters(site, position, first, count, device or torch.device("cpu"))
        if kind == "integer":
            return self._integers(substream, counters, n).view(shape)
        w = self.words(substream, counters)
        u = (w[0] >> 8).to(torch.float64) * 2.0**-24
        if kind == "bernoulli":
            return (u >= p).view(shape)
        if kind == "normal":
            u1 = ((w[0] >> 8).to(torch.float64) + 1) * 2.0**-24
            u2 = (w[1] >> 8).to(torch.float64) * 2.0**-24
            u = torch.sqrt(-2 * torch.log(u1)) * torch.cos(2 * torch.pi * u2)
        return u.to(torch.get_default_dtype()).view(shape)

    def _integers(self, substream: str, counters: list[torch.Tensor], n: int) -> torch.Tensor:
        """Each element's first word of four below 2**32 - (2**32 mod n), mod n; where all four are rejected,
        the draw goes on at counter word 3 + 1 (scellis.rng.integer)."""
        limit = 2**32 - 2**32 % n
        out = torch.zeros_like(counters[0])
        todo = torch.arange(out.numel(), device=out.device)
        while todo.numel():
            words = torch.stack(self.words(substream, [c[todo] for c in counters]))
            accepted = words < limit
            done = accepted.any(dim=0)
            first = accepted.to(torch.int8).argmax(dim=0, keepdim=True)
            out[todo[done]] = (words.gather(0, first)[0] % n)[done]
            todo = todo[~done]
            counters[3][todo] = (counters[3][todo] + 1) & self.MASK
        return out


class Shift2d:
    """Each example moved by its own shift, zeros filling in (random_crop's same-size crop of the zero-padded
    image, Scellis's SHIFT2D): out[n, ..., i, j] = x[n, ..., i + rows[n], j + cols[n]] where that lies inside,
    for shifts within `pads` (height, width)."""

    @staticmethod
    def apply(x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, pads: tuple[int, int]) -> torch.Tensor:
        n, height, width = x.shape[0], x.shape[-2], x.shape[-1]
        padded = F.pad(x.reshape(n, -1, height, width), (pads[1], pads[1], pads[0], pads[0]))
        r = pads[0] + rows.view(n, 1) + torch.arange(height, device=x.device)
        c = pads[1] + cols.view(n, 1) + torch.arange(width, device=x.device)
        examples = torch.arange(n, device=x.device)[:, None, None]
        moved = padded[examples, :, r[:, :, None], c[:, None, :]]  # [n, height, width, channels]
        return moved.permute(0, 3, 1, 2).reshape(x.shape)
