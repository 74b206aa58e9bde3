"""Stage: lower. Elementwise producers merged into their elementwise consumer: one kernel computes both and
writes both buffers (Kernel.stores), so the consumer does not read back what the producer just wrote and the
step dispatches one kernel fewer. An optimizer's moment updates and its parameter update become one kernel
per parameter this way. Elementwise producers of what a reduction reduces become its prologue
(Reduction.prologue): the reduction computes them where it loads their value (a cross-entropy's products,
a batch norm's gradient terms). Then what is left of an elementwise chain joins the epilogue of the MATMUL
or REDUCE that writes what it reads (`host`): a ReLU its product's, a parameter's update the kernel that
computes its gradient (which is then never stored: the update reads it in registers).

Expects a schedule's kernels in execution order (variants not chosen yet), its buffers, and the buffers the
step names (its inputs and outputs). Guarantees: the kernels compute the same values, bit for bit. A
producer A (ELEMENTWISE, the one writer of a float32, int32 or uint32 buffer X, all of it, contiguously) is
merged into a later ELEMENTWISE kernel B when B reads X only through A's own view of it (element c of B's
iteration is element c of A's), B does not write X and does not simply copy it, no kernel between them
reads X or writes what A reads, and the merged kernel binds at most `bindings` buffers. The merged kernel
runs where B ran; it computes A's expression in registers where B loaded X and still writes X, unless B was
X's only reader and the step does not name X (then X is written by nobody and gets no memory). A REDUCE B
takes A the same way when it reduces X through a permutation of X's axes (A then iterates in B's order) and
its epilogue does not read X; A's stores and the kept X become B's prologue stores. A cheap A (a few
arithmetic or comparison steps, a one-hot of labels, x minus its mean) that other kernels read in between
is computed again in B instead (`_cheap`): A stays for them, and goes once no kernel reads X; unless B
would then read an input after the output carried into it is written (the update would lose its place).
An elementwise B joins the epilogue of the one writer A (MATMUL or REDUCE) of what it reads on the same
terms (A's own operands stay its first inputs), at the earliest place after every read of the input an
output of B is carried into. A merge may count on plan.memory.update_in_place writing such an output into
its input (one binding for both) only where that update is sure: once every merge is made
(`still_in_place`), a merge whose update a later one undid is banned and the merging done again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from scellis.lower.kernels import Apply, Buffer, Coord, Expr, Kernel, Kind, Load, Reduction, Step, View
from scellis.lower.views import canonical, permute
from scellis.ops import DType, Op

MAX_BINDINGS = 8  # WebGPU's default maxStorageBuffersPerShaderStage: every adapter binds at least this many
MOST_BINDINGS = 16  # a kernel binds at most this many, however many the device offers (below)
BINDINGS = "bindings="  # a device's features name "bindings=N" where its kernels may bind N > MAX_BINDINGS


def bindings_feature(limit: int) -> frozenset[str]:
    """The feature that says a device's kernels may bind `limit` storage buffers (its
    maxStorageBuffersPerShaderStage, as requested): none at WebGPU's default, at most MOST_BINDINGS. Every
    device that offers MOST_BINDINGS or more so lowers a program alike."""
    n = min(limit, MOST_BINDINGS)
    return frozenset({f"{BINDINGS}{n}"}) if n > MAX_BINDINGS else frozenset()


def bindings_of(features: frozenset[str]) -> int:
    """How many storage buffers a kernel may bind on a device with `features` (`bindings_feature`)."""
    named = [int(f[len(BINDINGS) :]) for f in features if f.startswith(BINDINGS)]
    return max([MAX_BINDINGS, *(min(n, MOST_BINDINGS) for n in named)])


KEPT = (DType.F32, DType.I32, DType.U32)  # stored and loaded back unchanged (bool is stored as u32 words)


def merged(
    kernels: Sequence[Kernel],
    buffers: Sequence[Buffer],
    named: set[int],
    carried: dict[int, int],
    bindings: int = MAX_BINDINGS,
) -> tuple[Kernel, ...]:
    """`kernels` with every producer that can be merged into its consumer merged (module docstring);
    `carried` maps each output the step carries to the input it becomes (Schedule.carry); `bindings`: the
    storage buffers a kernel may bind on the device (`bindings_of`). A reduction that repeats an earlier
    one is dropped first (`once`)."""
    first = once(kernels, named)
    banned: frozenset[int] = frozenset()
    while True:  # each try bans what the one before could not keep (at most once per parameter)
        merger = _Merger(first, buffers, named, carried, banned, bindings=bindings)
        out = merger.run()
        lost = merger.still_in_place()
        if not lost:
            return out
        banned |= lost


def once(kernels: Sequence[Kernel], named: set[int]) -> list[Kernel]:
    """`kernels` without each REDUCE that repeats an earlier one (the same kind, inputs, argument,
    expression and variant, nothing it reads written in between, the earlier result not written since):
    its readers read the earlier result instead. A backward pass recomputes a batch norm's mean this way.
    Each dropped kernel wrote a whole buffer that the step does not name, and nothing else writes it."""
    writers: dict[int, int] = defaultdict(int)
    for kernel in kernels:
        for view in kernel.writes:
            writers[view.buffer] += 1
    seen: dict[tuple[object, ...], tuple[int, int]] = {}  # key -> (index in out, the buffer it wrote)
    written: dict[int, int] = {}  # buffer -> the index in out of its last writer
    instead: dict[int, int] = {}  # a dropped result -> the earlier one
    out: list[Kernel] = []
    for given in kernels:
        kernel = _reading(given, instead) if instead else given
        x = kernel.out.buffer
        alone = (
            kernel.kind is Kind.REDUCE
            and not kernel.stores
            and x not in named
            and writers[x] == 1
            and kernel.out.offset == 0
            and kernel.out.is_contiguous
            and all(v.buffer != x for v in kernel.inputs)
        )
        key = (kernel.inputs, kernel.arg, kernel.expr, kernel.variant, kernel.out.shape) if alone else None
        prior = seen.get(key) if key is not None else None
        unchanged = prior is not None and all(written.get(v.buffer, -1) < prior[0] for v in kernel.inputs)
        if prior is not None and unchanged and written.get(prior[1]) == prior[0]:
            instead[x] = prior[1]
            k = out[prior[0]]  # which now computes the dropped kernel's nodes too
            out[prior[0]] = Kernel(k.kind, k.out, k.inputs, k.arg, k.expr, k.variant, k.covers + kernel.covers)
            continue
        if key is not None:
            seen[key] = (len(out), x)
        for view in kernel.writes:
            written[view.buffer] = len(out)
        out.append(kernel)
    return out


def _reading(kernel: Kernel, instead: dict[int, int]) -> Kernel:
    """`kernel` reading buffer instead[b] wherever it read a buffer b of `instead`."""
    if not any(v.buffer in instead for v in kernel.inputs):
        return kernel
    inputs = tuple(v._replace(buffer=instead[v.buffer]) if v.buffer in instead else v for v in kernel.inputs)
    return kernel.with_views(kernel.out, inputs, kernel.stores)


class _Merger:
    """The kernels by order key (kernel i starts at key i; a merged kernel takes a key between two), and
    the keys at which each buffer is written and read."""

    def __init__(
        self,
        kernels: Sequence[Kernel],
        buffers: Sequence[Buffer],
        named: set[int],
        carried: dict[int, int],
        banned: frozenset[int] = frozenset(),
        *,
        bindings: int = MAX_BINDINGS,
    ) -> None:
        self.bindings = bindings  # the storage buffers a merged kernel may bind
        self.kernels: dict[float, Kernel] = {float(i): k for i, k in enumerate(kernels)}
        self.buffers, self.named, self.carried = buffers, named, carried
        # buffers x whose merge may not count on updates in place (`binds`): a try before lost them
        self.banned = banned
        self.hosted: dict[int, dict[int, int]] = {}  # such an x -> what its merge counts on updating in place
        self.writers: dict[int, list[float]] = defaultdict(list)
        self.readers: dict[int, list[float]] = defaultdict(list)
        for i, kernel in enumerate(kernels):
            for view in kernel.writes:
                self.writers[view.buffer].append(float(i))
            for view in kernel.inputs:
                self.readers[view.buffer].append(float(i))

    def run(self) -> tuple[Kernel, ...]:
        # the last consumers first: a parameter's update takes its moments' kernels, then their producer,
        # which no kernel but the update reads any more then (so its buffer needs no writing)
        for j in sorted(self.kernels, reverse=True):
            kernel = self.kernels.get(j)
            if kernel is not None and kernel.kind is Kind.ELEMENTWISE:
                self.consumer(j, kernel)
            elif kernel is not None and kernel.kind is Kind.REDUCE:
                self.reduction(j, kernel)
        # then what is left of each elementwise chain into the epilogue of the product or reduction it reads
        # (an update into its gradient's kernel), where the bindings the prologues took leave room
        for j in sorted(self.kernels, reverse=True):
            kernel = self.kernels.get(j)
            if kernel is not None and kernel.kind is Kind.ELEMENTWISE:
                self.host(j, kernel)
        self.siblings()
        return tuple(self.kernels[key] for key in sorted(self.kernels))

    def siblings(self) -> None:
        """Independent elementwise kernels of one shape that write only what the step names (the running
        statistics' updates, the step counter and the learning rate) computed by one kernel: the later one
        moves to the earlier one's place when nothing it reads is written in between and nothing reads
        what it updates in between."""
        last: dict[tuple[int, ...], float] = {}
        for j in sorted(self.kernels):
            b = self.kernels.get(j)
            if b is None or b.kind is not Kind.ELEMENTWISE or not all(v.buffer in self.named for v in b.writes):
                continue
            i = last.get(b.out.shape)
            a = self.kernels.get(i) if i is not None else None
            candidate = _merge(a, b, -1, keep=True) if a is not None and i is not None else None
            fits = candidate is not None and _bindings(candidate) <= self.bindings
            if a is None or i is None or candidate is None or not fits or not self.independent(a, b, i, j):
                last[b.out.shape] = j
                continue
            self.move_reads(b, j, i)
            for v in candidate.writes:
                self.writers[v.buffer] = [i]
            del self.kernels[j]
            self.kernels[i] = candidate

    def move_reads(self, kernel: Kernel, old: float, new: float) -> None:
        """What `kernel` read at key `old` is read at `new` now."""
        for v in kernel.inputs:
            self.readers[v.buffer] = sorted({*(r for r in self.readers[v.buffer] if r != old), new})

    def independent(self, a: Kernel, b: Kernel, i: float, j: float) -> bool:
        """Whether B (at j) can run with A (at i) as one kernel there: neither reads what the other writes,
        what B reads is written before i, and what B writes (or is carried into) is read by nothing in
        between."""
        a_writes, b_writes = {v.buffer for v in a.writes}, {v.buffer for v in b.writes}
        if any(v.buffer in b_writes for v in a.inputs) or any(v.buffer in a_writes for v in b.inputs):
            return False
        if a.variant != b.variant or any(w >= i for v in b.inputs for w in self.writers[v.buffer]):
            return False
        for buffer in b_writes:
            targets = [buffer, *([self.carried[buffer]] if buffer in self.carried else [])]
            if self.writers[buffer] != [j] or any(i < r < j for t in targets for r in self.readers[t]):
                return False
        return True

    def consumer(self, j: float, b: Kernel) -> None:
        """B at key j with every producer of what it reads merged in (a merged A's own producers too)."""
        tried: set[int] = set()
        while True:
            x = next((v.buffer for v in b.inputs if v.buffer not in tried), None)
            if x is None:
                return
            tried.add(x)
            i = self.producer(x, j, b)
            a = self.kernels.get(i) if i is not None else None
            if i is None or a is None:
                continue
            keep = self.readers[x] != [j] or x in self.named
            candidate = _merge(a, b, x, keep)
            at = self.place(a, candidate, i, j) if candidate is not None else None
            if candidate is None or at is None or _bindings(candidate) > self.bindings:
                continue
            b, j = self.adopt(x, (a, i), (b, j), (candidate, at), keep=keep)

    def adopt(
        self, x: int, a: tuple[Kernel, float], b: tuple[Kernel, float], merged: tuple[Kernel, float], *, keep: bool
    ) -> tuple[Kernel, float]:
        """The merged kernel of A and B (A wrote buffer x, B read it), at its key, in their place: the
        readers and writers moved to it (x written by nobody unless `keep`). Returns it and its key."""
        (a_kernel, i), (b_kernel, j), (candidate, at) = a, b, merged
        self.move_reads(a_kernel, i, at)
        self.move_reads(b_kernel, j, at)
        self.readers[x] = [r for r in self.readers[x] if r != at]
        for v in candidate.writes:
            self.writers[v.buffer] = [at]
        if not keep:
            self.writers[x] = []
        del self.kernels[i], self.kernels[j]
        self.kernels[at] = candidate
        return candidate, at

    def host(self, j: float, b: Kernel) -> None:
        """The ELEMENTWISE B at key j merged into the epilogue of the MATMUL or REDUCE that writes what it
        reads (`_operands`), when it can be."""
        for x in dict.fromkeys(v.buffer for v in b.inputs):
            writers = self.writers[x]
            i = writers[0] if len(writers) == 1 and writers[0] < j else None
            a = self.kernels.get(i) if i is not None else None
            if i is None or a is None or _operands(a) is None:
                continue
            if not self.fits(x, i, j, a, b, host=True):
                continue
            keep = self.readers[x] != [j] or x in self.named
            candidate = _merge(a, b, x, keep, operands=_operands(a))
            at = self.place(a, candidate, i, j) if candidate is not None else None
            if candidate is None or at is None:
                continue
            if not self.binds(candidate, at, (i, j), x):
                continue
            self.adopt(x, (a, i), (b, j), (candidate, at), keep=keep)
            return

    def binds(self, kernel: Kernel, at: float, moving: tuple[float, float], x: int) -> bool:
        """Whether `kernel`, to run at `at` in place of the kernels at `moving`, binds at most self.bindings
        buffers once the outputs it updates in place share their inputs' (`updated_in_place`); one that
        counts on that is recorded under x, the buffer whose merge made it, for `still_in_place`."""
        if x in self.banned:
            return _bindings(kernel) <= self.bindings
        updated = self.updated_in_place(kernel, at, moving)
        if _bindings(kernel, updated) > self.bindings:
            return False
        if _bindings(kernel) > self.bindings:
            self.hosted[x] = updated
        return True

    def updated_in_place(self, kernel: Kernel, at: float, moving: tuple[float, ...] = ()) -> dict[int, int]:
        """The outputs of `kernel` (at key `at`) that plan.memory.update_in_place will write into the input
        they are carried into (output -> input): written whole by this kernel alone, at the output's
        coordinates, the input read here only at that element (not by the kernel's own operands) and by no
        kernel after it (but those at the keys `moving`, which move to `at`)."""
        operands = _operands(kernel) or 0
        out: dict[int, int] = {}
        for view, _ in ((kernel.out, -1), *kernel.epilogue_stores):
            dst = self.carried.get(view.buffer)
            if dst is None or view.offset or not view.is_contiguous or view.size != self.buffers[dst].size:
                continue
            mine = kernel.inputs[operands:]
            # read here at the element written, not as an operand
            alone = all(v == view._replace(buffer=dst) for v in mine if v.buffer == dst) and any(
                v.buffer == dst for v in mine
            )
            alone = alone and all(v.buffer != dst for v in kernel.inputs[:operands])
            last = all(r <= at or r in moving for r in self.readers[dst]) and len(self.writers[view.buffer]) <= 1
            if alone and last:
                out[view.buffer] = dst
        return out

    def still_in_place(self) -> set[int]:
        """The buffers x of merges (`binds`) whose kernel no longer updates in place what it counted on
        updating in place: a later merge moved a read of the input after it."""
        lost: set[int] = set()
        for x, updated in self.hosted.items():
            key = next((at for at, k in self.kernels.items() if any(v.buffer in updated for v in k.writes)), None)
            if key is None or not updated.items() <= self.updated_in_place(self.kernels[key], key).items():
                lost.add(x)
        return lost

    def reduction(self, j: float, b: Kernel) -> None:
        """The REDUCE B at key j with elementwise producers of what it reduces merged into its prologue
        (Reduction.prologue): each producer's iteration permuted to the reduction's view of its output."""
        tried: set[int] = set()
        while True:
            assert isinstance(b.arg, Reduction)
            reads = b.arg.reads
            x = next((v.buffer for v in b.inputs[:reads] if v.buffer not in tried), None)
            if x is None:
                return
            tried.add(x)
            writers = self.writers[x]
            i = writers[0] if len(writers) == 1 and writers[0] < j else None
            a = self.kernels.get(i) if i is not None else None
            if i is None or a is None or a.kind is not Kind.ELEMENTWISE or any(v.buffer == x for v in b.inputs[reads:]):
                continue
            view = next(v for v in b.inputs[:reads] if v.buffer == x)
            turned = _turned(a, view)
            prologue = _prologue_kernel(b)
            if turned is None:
                continue
            if not self.fits(x, i, j, turned, prologue):
                if _cheap(a) and self.fits(x, i, j, turned, prologue, others=True):
                    b, j = self.recomputed(x, i, j, a=turned, b=b, prologue=prologue)
                continue
            keep = self.readers[x] != [j] or x in self.named
            merged = _merge(turned, prologue, x, keep) if len(prologue.expr.steps) > 1 else _alone(turned, keep)
            candidate = _reducing(b, merged) if merged is not None else None
            at = self.place(a, candidate, i, j) if candidate is not None else None
            if candidate is None or at is None or not self.binds(candidate, at, (i, j), x):
                continue
            b, j = self.adopt(x, (a, i), (b, j), (candidate, at), keep=keep)

    def recomputed(self, x: int, i: float, j: float, *, a: Kernel, b: Kernel, prologue: Kernel) -> tuple[Kernel, float]:
        """B at j computing a copy of the cheap A (at i) where it reduced A's output x, when other kernels
        read x in between (A stays for them; it goes when B was its last reader and the step does not name
        x). Returns B as it is now, and its key."""
        updated = {dst: src for src, dst in self.carried.items()}  # an input -> the output carried into it
        if any(w < j for v in a.inputs if v.buffer in updated for w in self.writers[updated[v.buffer]]):
            return b, j  # B would read an input after its update is written: no longer updatable in place
        merged = _merge(a, prologue, x, False) if len(prologue.expr.steps) > 1 else _alone(a, False)
        candidate = _reducing(b, merged) if merged is not None else None
        if candidate is None or not self.binds(candidate, j, (j, j), x):
            return b, j
        for v in candidate.inputs:
            self.readers[v.buffer] = sorted({*self.readers[v.buffer], j})
        self.readers[x] = [r for r in self.readers[x] if r != j]
        self.kernels[j] = candidate
        if not self.readers[x] and x not in self.named:  # nothing reads what A writes any more
            for v in a.inputs:
                self.readers[v.buffer] = [r for r in self.readers[v.buffer] if r != i]
            self.writers[x] = []
            del self.kernels[i]
        return candidate, j

    def place(self, a: Kernel, merged: Kernel, i: float, j: float) -> float | None:
        """The earliest key from A's (i) to B's (j) at which the merged kernel can run, or None: after what
        it reads is written, and after every read of an input that one of its outputs is carried into (so
        the planner can still update that input in place); before any other reader of what A wrote. Early,
        A's inputs die sooner; late, an update stays after the last read of what it updates."""
        after = [w for v in merged.inputs for w in self.writers[v.buffer] if w not in (i, j)]
        for v in merged.writes:
            after += [r for r in self.readers[v.buffer] if r < j and r not in (i, j)]
            if v.buffer in self.carried:
                after += [r for r in self.readers[self.carried[v.buffer]] if r < j and r not in (i, j)]
        before = [r for v in a.writes for r in self.readers[v.buffer] if i < r < j]
        last = max(after, default=-1.0)
        at = i if last < i else min((k + last) / 2 for k in self.kernels if k > last)
        return at if at <= j and all(at < r for r in before) else None

    def producer(self, x: int, j: float, consumer: Kernel) -> float | None:
        """The key of the one kernel writing buffer x, when it can be merged into the consumer at j."""
        writers = self.writers[x]
        i = writers[0] if len(writers) == 1 and writers[0] < j else None
        a = self.kernels.get(i) if i is not None else None
        return i if i is not None and a is not None and self.fits(x, i, j, a, consumer) else None

    def fits(
        self, x: int, i: float, j: float, a: Kernel, consumer: Kernel, *, others: bool = False, host: bool = False
    ) -> bool:
        """Whether A (at i, the one writer of buffer x) can be merged into the consumer at j (with `others`,
        whatever reads x in between: A's value is recomputed there, and A stays; with `host`, A is a MATMUL
        or REDUCE and the consumer joins its epilogue)."""
        if (_operands(a) is None if host else a.kind is not Kind.ELEMENTWISE) or a.variant != consumer.variant:
            return False
        out, buffer = a.out, self.buffers[x]
        written = self.kernels[i].out  # A's own output view (`a` may iterate it in another order: _turned)
        whole = written.buffer == x and written.offset == 0 and written.is_contiguous and written.size == buffer.size
        same = View(x, consumer.out.shape, out.strides, 0)
        fits = (
            whole
            and buffer.dtype in KEPT
            and a.expr.dtype is buffer.dtype
            and out.shape == consumer.out.shape
            and all(v == same for v in consumer.inputs if v.buffer == x)
            and all(w.buffer != x for w in consumer.writes)
            and (others or not any(i < r < j for r in self.readers[x]))
        )
        # and nothing A reads changes before B runs (B included)
        unchanged = all(not any(i < w <= j for w in self.writers[v.buffer]) for v in a.inputs)
        return fits and unchanged


def _merge(a: Kernel, b: Kernel, x: int, keep: bool, operands: int | None = None) -> Kernel | None:
    """B computing A's expression where it loaded buffer x (A's output), and writing x too when `keep`
    (x = -1: B reads nothing of A's, and the kernel computes both side by side). With `operands`, A is a
    MATMUL or REDUCE whose first `operands` inputs are its own (`_operands`), and the merged kernel is A's
    kind with B as the rest of its epilogue (A's prologue stores kept as they are)."""
    first = operands or 0
    inputs: list[View] = list(a.inputs[:first])

    def index(view: View) -> int:
        if view not in inputs[first:]:
            inputs.append(view)
        return inputs.index(view, first)

    steps: list[Step] = []
    dtypes: list[DType] = []

    def add(step: Step, dtype: DType) -> int:
        steps.append(step)
        dtypes.append(dtype)
        return len(steps) - 1

    def copy(kernel: Kernel, skip: int | None, value_of_skipped: int) -> list[int]:
        mapped: list[int] = []
        for step, dtype in zip(kernel.expr.steps, kernel.expr.dtypes, strict=True):
            if isinstance(step, Load) and kernel.inputs[step.input].buffer == skip:
                mapped.append(value_of_skipped)
            elif isinstance(step, Load):
                mapped.append(add(Load(index(kernel.inputs[step.input])), dtype))
            elif isinstance(step, Apply):
                mapped.append(add(Apply(step.op, step.arg, tuple(mapped[s] for s in step.src)), dtype))
            else:
                mapped.append(add(step, dtype))
        return mapped

    in_a = copy(a, None, -1)
    in_b = copy(b, x, in_a[-1])
    if in_b[-1] != len(steps) - 1:
        return None  # B's value is x itself: nothing to merge into
    stores = [*a.prologue_stores, *((view, in_a[s]) for view, s in a.epilogue_stores)]
    if keep:
        stores.append((a.out, in_a[-1]))
    stores += [(view, in_b[s]) for view, s in b.stores]
    expr = Expr(tuple(steps), tuple(dtypes))
    kind, arg = (a.kind, a.arg) if operands is not None else (b.kind, b.arg)
    return Kernel(kind, b.out, tuple(inputs), arg, expr, b.variant, a.covers + b.covers, tuple(stores))


def _bindings(kernel: Kernel, in_place: dict[int, int] | None = None) -> int:
    """The buffers `kernel` binds, once the outputs `in_place` (output -> input) are written into their inputs."""
    moved = in_place or {}
    return len({moved.get(v.buffer, v.buffer) for v in (*kernel.inputs, *kernel.writes)})


def _operands(kernel: Kernel) -> int | None:
    """For a kind whose expression of Acc runs at its output's coordinates, with the inputs after its own
    loaded there (MATMUL, REDUCE): how many inputs are its own; None for the others."""
    if kernel.kind is Kind.MATMUL:
        return 2
    if kernel.kind is Kind.REDUCE and isinstance(kernel.arg, Reduction):
        return kernel.arg.reads
    return None


def _turned(a: Kernel, view: View) -> Kernel | None:
    """A iterating in the order of `view` (a reduction's view of A's output, its axes permuted; coordinates
    A reads follow their axes), or None when the view is no permutation of A's whole output."""
    if len(view.shape) != len(a.out.shape):
        return None
    out = canonical(a.out)
    perm: list[int] = []
    for dim, stride in zip(view.shape, canonical(view).strides, strict=True):
        k = next(
            (k for k in range(len(out.shape)) if k not in perm and (out.shape[k], out.strides[k]) == (dim, stride)),
            None,
        )
        if k is None:
            return None
        perm.append(k)
    if view.offset != out.offset:
        return None
    order = tuple(perm)
    inputs = tuple(permute(v, order) for v in a.inputs)
    stores = tuple((permute(v, order), step) for v, step in a.stores)
    turned = a.with_views(permute(a.out, order), inputs, stores)
    if not any(isinstance(step, Coord) for step in a.expr.steps) or order == tuple(range(len(order))):
        return turned
    steps = tuple(Coord(order.index(step.axis)) if isinstance(step, Coord) else step for step in a.expr.steps)
    expr = Expr(steps, a.expr.dtypes)
    return Kernel(turned.kind, turned.out, turned.inputs, turned.arg, expr, turned.variant, turned.covers, stores)


def _prologue_kernel(b: Kernel) -> Kernel:
    """B's prologue as an elementwise kernel over the reduced input's shape (writing nothing of its own)."""
    assert isinstance(b.arg, Reduction)
    reads, shape = b.arg.reads, b.inputs[0].shape
    expr = b.arg.prologue if b.arg.prologue is not None else Expr((Load(0),), (DType.F32,))
    stores = b.prologue_stores
    return Kernel(Kind.ELEMENTWISE, View.contiguous(-1, shape), b.inputs[:reads], None, expr, b.variant, (), stores)


def _alone(a: Kernel, keep: bool) -> Kernel | None:
    """A's expression as the whole prologue of a reduction that reduced A's output itself."""
    if a.expr.dtype is not DType.F32:
        return None
    stores = (*a.stores, *([(a.out, len(a.expr.steps) - 1)] if keep else []))
    out = View.contiguous(-1, a.out.shape)
    return Kernel(Kind.ELEMENTWISE, out, a.inputs, None, a.expr, a.variant, a.covers, stores)


def _reducing(b: Kernel, prologue: Kernel) -> Kernel:
    """B reducing the value of the elementwise `prologue` (its inputs, expression and stores)."""
    assert isinstance(b.arg, Reduction)
    reads, now = b.arg.reads, len(prologue.inputs)
    steps = tuple(
        Load(step.input - reads + now) if isinstance(step, Load) else step for step in b.expr.steps
    )  # the epilogue's loads follow the prologue's inputs
    arg = b.arg._replace(prologue=prologue.expr, reads=now)
    inputs = (*prologue.inputs, *b.inputs[reads:])
    covers = prologue.covers + b.covers
    stores = (*prologue.stores, *b.epilogue_stores)
    return Kernel(b.kind, b.out, inputs, arg, Expr(steps, b.expr.dtypes), b.variant, covers, stores)


CHEAP = {Op.EQUAL, Op.LESS, Op.CAST, Op.ADD, Op.SUB, Op.MUL, Op.NEG, Op.WHERE}


def _cheap(a: Kernel) -> bool:
    """A producer worth computing again in a reduction rather than reading back (a one-hot of labels):
    a few arithmetic or comparison steps over at most two loads, and no stores of its own."""
    loads = sum(isinstance(step, Load) for step in a.expr.steps)
    ops = [step.op for step in a.expr.steps if isinstance(step, Apply)]
    return not a.stores and loads <= 2 and len(a.expr.steps) <= 6 and all(op in CHEAP for op in ops)
