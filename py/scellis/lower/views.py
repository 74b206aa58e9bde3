"""View algebra: broadcast, permute, reshape and slice a strided view without moving data."""

from __future__ import annotations

import math

from scellis.lower.kernels import Shape, View


def canonical(view: View) -> View:
    """Size-1 axes get stride 0, so equal layouts compare equal."""
    if 1 not in view.shape:
        return view
    strides = tuple(0 if dim == 1 else s for dim, s in zip(view.shape, view.strides, strict=True))
    return View(view.buffer, view.shape, strides, view.offset)


def broadcast(view: View, shape: Shape) -> View:
    """Numpy broadcasting to `shape` (new leading axes and size-1 axes get stride 0)."""
    if view.shape == shape:
        return canonical(view)
    lead = len(shape) - len(view.shape)
    strides = [0] * lead
    for dim, target, stride in zip(view.shape, shape[lead:], view.strides, strict=True):
        strides.append(stride if dim == target else 0)
    return canonical(View(view.buffer, shape, tuple(strides), view.offset))


def permute(view: View, perm: tuple[int, ...]) -> View:
    return View(view.buffer, tuple(view.shape[p] for p in perm), tuple(view.strides[p] for p in perm), view.offset)


def reshape(view: View, shape: Shape) -> View | None:
    """The same elements in row-major order under a new shape, or None when the strides cannot
    express it without a copy (numpy's no-copy reshape rule)."""
    if view.shape == shape:
        return view
    if math.prod(shape) != math.prod(view.shape):
        return None
    old = [(d, s) for d, s in zip(view.shape, view.strides, strict=True) if d != 1]
    new = [d for d in shape if d != 1]
    new_strides = [0] * len(new)
    oi = ni = 0
    while ni < len(new) and oi < len(old):
        np_, op_, nj, oj = new[ni], old[oi][0], ni + 1, oi + 1
        while np_ != op_:
            if np_ < op_:
                np_, nj = np_ * new[nj], nj + 1
            else:
                op_, oj = op_ * old[oj][0], oj + 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None  # the old axes in this group are not laid out one after another
        new_strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new_strides[k - 1] = new_strides[k] * new[k]
        ni, oi = nj, oj
    it = iter(new_strides)
    strides = tuple(0 if d == 1 else next(it) for d in shape)
    return canonical(View(view.buffer, shape, strides, view.offset))


def concat_targets(out: View, shapes: list[Shape], axis: int) -> list[View]:
    """The part of `out` each of the concatenated values (of `shapes`) fills, one after another along
    `axis`."""
    targets, start = [], 0
    for shape in shapes:
        starts = tuple(start if i == axis else 0 for i in range(len(out.shape)))
        targets.append(slice_view(out, starts, (1,) * len(out.shape), shape))
        start += shape[axis]
    return targets


def slice_view(view: View, starts: Shape, steps: Shape, shape: Shape) -> View:
    offset = view.offset + sum(a * s for a, s in zip(starts, view.strides, strict=True))
    strides = tuple(s * k for s, k in zip(view.strides, steps, strict=True))
    return canonical(View(view.buffer, shape, strides, offset))


def move_axes_last(view: View, axes: tuple[int, ...]) -> View:
    """Reduced axes moved to the end (kept axes first, in order)."""
    kept = [i for i in range(len(view.shape)) if i not in axes]
    return permute(view, (*kept, *axes))
