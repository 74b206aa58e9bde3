"""The layers an exported model.py uses where torch.nn has no module with the program's parameter layout or
semantics. Each class is copied into model.py only when the program uses it (scellis.torchexport.model
reads this file as text; Scellis itself never imports it, so the browser's Python needs no torch)."""

from __future__ import annotations

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
